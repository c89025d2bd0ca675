//! `fsdelta serve`: parse the flags, read the token file, and hand over to the `serve` room.
//!
//! This edge must never print the token or the store's password (the room shows the store
//! redacted).

use super::{DbArg, EXIT_OK};
use anyhow::{Context, Result};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Options of `fsdelta serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Where to listen (address:port). The default answers this machine only; put a reverse
    /// proxy with TLS in front for a lab (docs/serve.md).
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR:PORT")]
    pub listen: SocketAddr,
    /// A file (mode 600) whose first line is the token that triage needs; without it the
    /// server only reads, and raises no alerts.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Seconds between two sweeps for new alerts (with --token-file).
    #[arg(long, default_value_t = 300, value_name = "SECONDS")]
    pub sweep_every: u64,
    #[command(flatten)]
    pub db: DbArg,
}

/// `fsdelta serve`.
pub fn main(args: &ServeArgs) -> Result<i32> {
    let token = args
        .token_file
        .as_deref()
        .map(crate::serve::auth::read_token)
        .transpose()
        .context("reading --token-file")?;
    if args.sweep_every == 0 {
        anyhow::bail!("--sweep-every must be at least 1 second");
    }
    crate::serve::serve(crate::serve::Config {
        location: args.db.location(),
        listen: args.listen,
        token,
        sweep_every: std::time::Duration::from_secs(args.sweep_every),
    })?;
    Ok(EXIT_OK)
}
