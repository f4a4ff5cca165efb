//! `mcpmux trust`: show what a config found in the current directory would
//! do and record it in the user's trust store; `--list` and `--revoke`.
//! Also the one place the CLI turns a located config into a [`Config`],
//! asking on a terminal before it uses an untrusted one (core decides what
//! is trusted: `mcpmux_core::config::trust`).

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use mcpmux_core::config::trust::{self, Candidate, Located, Origin, TrustStatus, TrustStore};
use mcpmux_core::{Config, Error};

/// `mcpmux trust [PATH] [--yes] [--list] [--revoke PATH]`.
#[derive(Args, Debug)]
pub struct TrustArgs {
    /// The config to trust (default: the one `mcpmux` would use here:
    /// --config, $MCPMUX_CONFIG, ./mcpmux.toml, ./.mcp.json).
    #[arg(value_name = "PATH", conflicts_with_all = ["list", "revoke"])]
    path: Option<PathBuf>,
    /// Trust without asking (needed when stdin is not a terminal).
    #[arg(long, short = 'y')]
    yes: bool,
    /// List the trusted config files.
    #[arg(long, conflicts_with = "revoke")]
    list: bool,
    /// Forget a trusted config file.
    #[arg(long, value_name = "PATH")]
    revoke: Option<PathBuf>,
}

/// Runs `mcpmux trust`; `config` is the global `--config`.
pub fn run(args: &TrustArgs, config: Option<&Path>, json: bool) -> Result<u8, Error> {
    let store = TrustStore::for_user()?;
    if args.list {
        let list = store.list()?;
        if json {
            crate::print_json(&serde_json::json!({ "store": store.path(), "trusted": list }))?;
        } else if list.is_empty() {
            crate::print(&format!("no trusted configs ({})", store.path().display()))?;
        } else {
            let lines: Vec<String> = list
                .iter()
                .map(|f| format!("{}  sha256 {}", f.path, f.sha256))
                .collect();
            crate::print(&lines.join("\n"))?;
        }
        return Ok(0);
    }
    if let Some(path) = &args.revoke {
        let revoked = store.revoke(path)?;
        if json {
            crate::print_json(&serde_json::json!({ "path": path, "revoked": revoked }))?;
        } else if revoked {
            crate::print(&format!("{}: no longer trusted", path.display()))?;
        } else {
            crate::print(&format!("{}: was not trusted", path.display()))?;
        }
        return Ok(0);
    }
    let path = match (&args.path, trust::locate(config)) {
        (Some(p), _) => p.clone(),
        (None, Some(located)) => located.path,
        (None, None) => return Err(no_config()),
    };
    let candidate = Candidate::read(&path)?;
    let summary = candidate.summary()?;
    let already = candidate.status(&store)? == TrustStatus::Trusted;
    if !args.yes && !already {
        if !std::io::stdin().is_terminal() {
            // The failure contract (one JSON line on stderr, nothing on
            // stdout), with what the config would do beside the error.
            let e = Error::InvalidInput(format!(
                "{} was not trusted: stdin is not a terminal, so review what it would do \
                 ('config' here) and pass --yes to trust it",
                candidate.real_path.display()
            ));
            let mut out = e.to_json();
            out["config"] = serde_json::to_value(&summary).unwrap_or_default();
            eprintln!("{out}");
            return Ok(crate::EXIT_FAILURE);
        }
        eprint!("{}", summary.human());
        if !ask_on_terminal(&format!(
            "Trust {} and let mcpmux run it?",
            candidate.real_path.display()
        ))? {
            return Err(Error::InvalidInput(format!(
                "{} was not trusted (answered no)",
                candidate.real_path.display()
            )));
        }
    }
    store.trust(&candidate)?;
    if json {
        let mut out = serde_json::to_value(&summary).map_err(|e| Error::Internal(e.to_string()))?;
        out["trusted"] = true.into();
        out["store"] = store.path().display().to_string().into();
        crate::print_json(&out)?;
    } else {
        crate::print(&format!(
            "{}trusted: mcpmux uses this file until its content changes",
            summary.human()
        ))?;
    }
    Ok(0)
}

/// The config the CLI uses: `--config`, `$MCPMUX_CONFIG`, then a trusted
/// `./mcpmux.toml` or `./.mcp.json`. An untrusted discovered file is
/// `CONFIG_UNTRUSTED`, unless stdin and stderr are a terminal and the user
/// answers yes when asked (default no). `None` when there is no config.
pub fn load(flag: Option<&Path>) -> Result<Option<(Config, Located)>, Error> {
    let Some(located) = trust::locate(flag) else {
        return Ok(None);
    };
    if located.origin != Origin::Discovered {
        return Ok(Some((Config::load(&located.path)?, located)));
    }
    let store = TrustStore::for_user()?;
    let candidate = Candidate::read(&located.path)?;
    let status = candidate.status(&store)?;
    if status != TrustStatus::Trusted {
        let error = candidate.untrusted_error(&status);
        if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
            return Err(error);
        }
        eprintln!("mcpmux: {error}");
        eprint!("{}", candidate.summary()?.human());
        if !ask_on_terminal("Trust this config and run it?")? {
            return Err(error);
        }
        store.trust(&candidate)?;
    }
    Ok(Some((candidate.parse()?, located)))
}

/// The error when no config is found anywhere.
pub fn no_config() -> Error {
    Error::ConfigInvalid(
        "no config found: pass --config FILE, set MCPMUX_CONFIG, or create ./mcpmux.toml or ./.mcp.json".into(),
    )
}

/// Asks `question` on stderr and reads the answer from stdin when stdin is
/// a terminal; anything but y/yes is no, and so is a stdin that is not a
/// terminal (never read).
fn ask_on_terminal(question: &str) -> Result<bool, Error> {
    if !std::io::stdin().is_terminal() {
        return Ok(false);
    }
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{question} [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    // One line of at most 1 KiB: an endless line is not buffered.
    std::io::Read::take(std::io::stdin().lock(), 1024)
        .read_line(&mut answer)
        .map_err(|e| Error::InvalidInput(format!("cannot read the answer: {e}")))?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}
