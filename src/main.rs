//! The `fsdelta` binary: everything lives in the library; this only hands over to the CLI edge.

fn main() {
    std::process::exit(fsdelta::cli::main());
}
