//! The `fsdelta` binary: everything lives in the library; this only hands over to the CLI edge,
//! after taking fsdelta's secrets (`FSDELTA_DB`, every `PG*` variable) out of the process
//! environment so that nothing fsdelta spawns inherits them (`fsdelta::os::env`).

fn main() {
    // The command line first: clap reads FSDELTA_DB (`--db`'s default) from the environment.
    let cli = match fsdelta::cli::parse() {
        Ok(cli) => cli,
        Err(code) => std::process::exit(code),
    };
    // SAFETY: no thread has been started yet (parsing the command line starts none), so nothing
    // reads the environment while the secrets are removed from it.
    unsafe { fsdelta::os::env::take_secrets() };
    std::process::exit(fsdelta::cli::dispatch(cli));
}
