//! `fsdelta fsmark`: the fs_mark-compatible engine on its own (being written).

/// Run `fsdelta fsmark ARGS`; returns the exit code.
pub fn main(_args: &[String]) -> i32 {
    eprintln!("fsdelta fsmark: not built yet");
    2
}
