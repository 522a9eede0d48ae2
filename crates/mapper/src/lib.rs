//! tmp
pub mod topology;
pub use topology::*;
