//! `fsdelta fsmark`: the fs_mark-compatible engine on its own (being written).
