//! The tokio runtime every front end builds (the CLI, the Python and Node
//! modules, each C engine): one builder and one thread-count rule, so that
//! `MCPMUX_WORKER_THREADS` means the same everywhere. Core itself has no
//! runtime; the front end owns the one it builds here.
//!
//! Worker threads, first that is set: the front end's explicit option (C
//! `{"worker_threads": N}`), `$MCPMUX_WORKER_THREADS`, its older names
//! [`WORKER_THREADS_ALIASES`] (`MCPMUX_ENGINE_THREADS`, once Python's;
//! `MCPMUX_NODE_WORKER_THREADS`, once Node's), the front end's default
//! (tokio's one per CPU when it has none). A value that is not an integer
//! from 1 to [`MAX_WORKER_THREADS`] is `INVALID_INPUT` naming the variable,
//! never silently ignored; an empty variable counts as unset.

use crate::error::Error;

/// The environment variable that sets the number of worker threads.
pub const WORKER_THREADS_ENV: &str = "MCPMUX_WORKER_THREADS";

/// Older names of [`WORKER_THREADS_ENV`], read (in this order) when it is
/// unset; every front end honours them.
pub const WORKER_THREADS_ALIASES: &[&str] =
    &["MCPMUX_ENGINE_THREADS", "MCPMUX_NODE_WORKER_THREADS"];

/// Most worker threads a runtime may be given.
pub const MAX_WORKER_THREADS: usize = 1024;

/// A multi-thread runtime builder with every driver enabled, threads named
/// `thread_name`, and the worker count decided by [`worker_threads`]. The
/// caller may add its own hooks (`on_thread_start`) before `build()`.
pub fn builder(
    thread_name: &str,
    explicit: Option<usize>,
    default: Option<usize>,
) -> Result<tokio::runtime::Builder, Error> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all().thread_name(thread_name);
    if let Some(n) = worker_threads(explicit, default)? {
        builder.worker_threads(n);
    }
    Ok(builder)
}

/// The worker count to use: `explicit`, else the environment
/// ([`WORKER_THREADS_ENV`], then its aliases), else `default`; `None`
/// leaves tokio's default (one per CPU).
pub fn worker_threads(
    explicit: Option<usize>,
    default: Option<usize>,
) -> Result<Option<usize>, Error> {
    decide(explicit, default, &|name| std::env::var(name).ok())
}

/// [`worker_threads`] with variables read through `lookup`.
fn decide(
    explicit: Option<usize>,
    default: Option<usize>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<usize>, Error> {
    if let Some(n) = explicit {
        return Ok(Some(n));
    }
    let names = std::iter::once(WORKER_THREADS_ENV).chain(WORKER_THREADS_ALIASES.iter().copied());
    for name in names {
        let Some(value) = lookup(name).filter(|v| !v.trim().is_empty()) else {
            continue;
        };
        return match value.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_WORKER_THREADS).contains(&n) => Ok(Some(n)),
            _ => Err(Error::InvalidInput(format!(
                "environment variable {name} must be an integer from 1 to \
                 {MAX_WORKER_THREADS} (worker threads), not '{}'",
                value.chars().take(40).collect::<String>()
            ))),
        };
    }
    Ok(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn explicit_then_env_then_aliases_then_default() {
        let env = [
            ("MCPMUX_WORKER_THREADS", "3"),
            ("MCPMUX_ENGINE_THREADS", "5"),
            ("MCPMUX_NODE_WORKER_THREADS", "7"),
        ];
        assert_eq!(decide(Some(9), Some(2), &with(&env)).unwrap(), Some(9));
        assert_eq!(decide(None, Some(2), &with(&env)).unwrap(), Some(3));
        assert_eq!(decide(None, Some(2), &with(&env[1..])).unwrap(), Some(5));
        assert_eq!(decide(None, Some(2), &with(&env[2..])).unwrap(), Some(7));
        assert_eq!(decide(None, Some(2), &with(&[])).unwrap(), Some(2));
        assert_eq!(decide(None, None, &with(&[])).unwrap(), None);
        // Empty counts as unset.
        let empty = [
            ("MCPMUX_WORKER_THREADS", " "),
            ("MCPMUX_ENGINE_THREADS", "4"),
        ];
        assert_eq!(decide(None, None, &with(&empty)).unwrap(), Some(4));
    }

    #[test]
    fn a_bad_value_is_an_error_naming_the_variable() {
        for bad in ["0", "-1", "two", "1025", "1.5"] {
            let env = [("MCPMUX_ENGINE_THREADS", bad)];
            let e = decide(None, Some(2), &with(&env)).unwrap_err();
            assert_eq!(e.code(), "INVALID_INPUT");
            assert!(e.to_string().contains("MCPMUX_ENGINE_THREADS"), "{e}");
        }
        // The explicit option is not second-guessed by a bad variable.
        let env = [("MCPMUX_WORKER_THREADS", "lots")];
        assert_eq!(decide(Some(1), None, &with(&env)).unwrap(), Some(1));
    }

    #[test]
    fn the_builder_names_and_counts_its_threads() {
        let rt = builder("mcpmux-test-rt", Some(3), None)
            .unwrap()
            .build()
            .unwrap();
        let names = rt.block_on(async {
            let mut names = std::collections::BTreeSet::new();
            for _ in 0..64 {
                let name = tokio::spawn(async { std::thread::current().name().map(str::to_owned) })
                    .await
                    .unwrap();
                names.insert(name);
            }
            names
        });
        assert!(
            names.iter().all(|n| n.as_deref() == Some("mcpmux-test-rt")),
            "{names:?}"
        );
        assert_eq!(rt.metrics().num_workers(), 3);
    }
}
