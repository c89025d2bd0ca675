//! The native fs_mark-compatible engine (being written).
