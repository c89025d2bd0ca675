//! placeholder
pub mod rand;
