//! parbench: a toolkit for people who build and measure parallel runtimes.
//!
//! This root crate re-exports the member crates so that one dependency gives the whole toolkit.
