//! fs_mark's output format (being written).
