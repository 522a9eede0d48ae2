//! tmp
pub mod contention;
pub mod mapping;
pub mod mix;
pub mod report;
pub mod topology;
pub use contention::*;
pub use mapping::*;
pub use mix::*;
pub use report::*;
pub use topology::*;
pub mod perf;
