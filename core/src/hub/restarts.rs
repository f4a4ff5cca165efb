//! When a failed server is started again: the restart budget of one server
//! (at most `max_restarts` within `restart_window`, forgotten after it has
//! been healthy for a whole window) and the backoff between attempts (0.5 s
//! doubling to 30 s, with jitter so that servers that failed together do not
//! restart in lockstep).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::config::{Restart, Supervision};

/// The first wait before a restart.
pub(crate) const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest wait before a restart.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The restarts of one server. Owned by its supervisor task.
#[derive(Debug)]
pub(crate) struct Restarts {
    restart: Restart,
    max: u32,
    window: Duration,
    /// When each restart within the window began, oldest first (at most
    /// `max` entries).
    recent: VecDeque<Instant>,
}

/// What to do after a failure.
#[derive(Debug, PartialEq)]
pub(crate) enum Next {
    /// Wait this long, then start attempt number `attempt` (1 = first restart).
    Restart {
        /// Restarts within the window, this one included.
        attempt: u32,
        /// The wait before it.
        after: Duration,
    },
    /// No more restarts: `restart = "never"`, or the budget is spent.
    GiveUp {
        /// Why, for the server's error.
        why: String,
    },
}

impl Restarts {
    /// The budget of a server with `supervision`.
    pub(crate) fn new(supervision: &Supervision) -> Restarts {
        Restarts {
            restart: supervision.restart,
            max: supervision.max_restarts,
            window: supervision.restart_window,
            recent: VecDeque::new(),
        }
    }

    /// The server has been healthy since `since`: a whole window of health
    /// forgets the restarts before it.
    pub(crate) fn healthy_since(&mut self, since: Instant, now: Instant) {
        if now.saturating_duration_since(since) >= self.window {
            self.recent.clear();
        }
    }

    /// Decides what follows a failure at `now`, and counts the restart.
    pub(crate) fn after_failure(&mut self, now: Instant) -> Next {
        if self.restart == Restart::Never {
            return Next::GiveUp {
                why: "restart = \"never\"".into(),
            };
        }
        while self
            .recent
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= self.window)
        {
            self.recent.pop_front();
        }
        if self.recent.len() >= self.max as usize {
            return Next::GiveUp {
                why: format!(
                    "restarted {} times within {} s (max_restarts); not restarted again until refresh",
                    self.recent.len(),
                    self.window.as_secs_f64()
                ),
            };
        }
        self.recent.push_back(now);
        let attempt = u32::try_from(self.recent.len()).unwrap_or(u32::MAX);
        Next::Restart {
            attempt,
            after: jittered(backoff(attempt)),
        }
    }
}

/// The wait before restart `attempt` (1-based), before jitter.
pub(crate) fn backoff(attempt: u32) -> Duration {
    let doublings = attempt.saturating_sub(1).min(16);
    FIRST_BACKOFF
        .saturating_mul(1u32 << doublings)
        .min(MAX_BACKOFF)
}

/// `wait` moved by up to ±20% at random.
fn jittered(wait: Duration) -> Duration {
    let mut byte = [0u8; 1];
    let spread = if getrandom::fill(&mut byte).is_ok() {
        f64::from(byte[0]) / 255.0 * 0.4 - 0.2
    } else {
        0.0
    };
    wait.mul_f64(1.0 + spread)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn supervision(restart: Restart, max: u32, window_s: u64) -> Supervision {
        Supervision {
            restart,
            max_restarts: max,
            restart_window: Duration::from_secs(window_s),
            ..Supervision::defaults("stdio")
        }
    }

    #[test]
    fn backoff_doubles_from_half_a_second_to_thirty() {
        let waits: Vec<f64> = (1..=9).map(|a| backoff(a).as_secs_f64()).collect();
        assert_eq!(waits, [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]);
        assert_eq!(backoff(u32::MAX), MAX_BACKOFF);
    }

    #[test]
    fn the_budget_is_spent_within_a_window_and_refilled_by_health() {
        let mut r = Restarts::new(&supervision(Restart::OnFailure, 2, 300));
        let t0 = Instant::now();
        for expected in 1..=2 {
            match r.after_failure(t0) {
                Next::Restart { attempt, after } => {
                    assert_eq!(attempt, expected);
                    let base = backoff(expected).as_secs_f64();
                    let got = after.as_secs_f64();
                    assert!(got >= base * 0.79 && got <= base * 1.21, "{got} vs {base}");
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(matches!(r.after_failure(t0), Next::GiveUp { .. }));
        // Restarts older than the window no longer count.
        let later = t0 + Duration::from_secs(301);
        assert!(matches!(
            r.after_failure(later),
            Next::Restart { attempt: 1, .. }
        ));
        // A whole window of health forgets them too.
        r.healthy_since(later, later + Duration::from_secs(300));
        assert!(matches!(
            r.after_failure(later + Duration::from_secs(300)),
            Next::Restart { attempt: 1, .. }
        ));
    }

    #[test]
    fn never_gives_up_at_once() {
        let mut r = Restarts::new(&supervision(Restart::Never, 5, 300));
        assert!(matches!(
            r.after_failure(Instant::now()),
            Next::GiveUp { .. }
        ));
    }
}
