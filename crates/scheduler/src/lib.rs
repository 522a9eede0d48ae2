//! Work in progress: the scheduler lands in the next commits.
