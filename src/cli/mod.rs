//! The command-line edge: clap definitions, dispatch, and the mapping of errors to exit codes
//! (0 ok / no regression, 1 regression, 2 error, 130 interrupted).
//!
//! Why a room of its own: only this edge prints to the terminal and turns typed errors into
//! messages. It must never measure, run SQL or format tables itself; it calls the rooms that do.

pub mod dbench;
pub mod fsmark;

use clap::{Parser, Subcommand};

/// fsdelta: measure filesystem performance, keep every number, tell which differences are real.
#[derive(Debug, Parser)]
#[command(name = "fsdelta", version, about, long_about = None)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The native fs_mark-compatible engine on its own: takes fs_mark 3.3's flags and prints its
    /// output format (workers are threads, not processes). Example: fsdelta fsmark -d /mnt/t -s 0 -n 1000
    #[command(disable_help_flag = true)]
    Fsmark {
        /// fs_mark's own flags (see `fsdelta fsmark -h`), plus --json.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The native dbench-compatible engine on its own: takes dbench 4.00's flags and prints its
    /// output format (clients are threads). Example: fsdelta dbench -D /mnt/t -t 60 4
    #[command(disable_help_flag = true)]
    Dbench {
        /// dbench's own flags and NPROCS (see `fsdelta dbench -h`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// Entry point; returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match cli.command {
        Command::Fsmark { args } => fsmark::main(&args),
        Command::Dbench { args } => dbench::main(&args),
    }
}
