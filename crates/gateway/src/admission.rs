//! One request's answer counted against its client's budget from the moment
//! a server's reader reads it, not only once the gateway has handled it.
//!
//! A tool call carries an [`AnswerCharge`] as its core
//! [`AnswerGate`]: the server's reader asks it whether to keep the result
//! as soon as it has read it. It is kept when it fits the client's budget
//! (`budget.rs`: counted once, plus the copies handling it makes), and
//! then the reader holds off while those copies take the client past its
//! budget, so the server's pipe or socket pushes back; one that does not
//! fit is dropped there, never copied, and the client gets -32000
//! "gateway busy" for it. Without this, answers read faster than they are
//! handled piled up uncounted between the reader and the calls.

use std::sync::{Arc, Mutex};

use mcpmux_core::{Admission, AnswerGate};
use serde_json::Value;

use super::budget::{ClientBudget, Held, Outgoing};

/// What the reader decided for one request's answer, until the request's
/// task [`settles`](AnswerCharge::settle) it.
pub(crate) struct AnswerCharge {
    budget: ClientBudget,
    state: Mutex<Decided>,
}

/// What a server's reader decided.
#[derive(Default)]
enum Decided {
    /// Nothing read yet (or not through the gate: a task's result, a
    /// resource, a 2026-07-28 server's answer).
    #[default]
    Nothing,
    /// Kept, and counted.
    Kept(Held),
    /// Dropped, for this reason.
    Refused(String),
}

impl AnswerCharge {
    /// A charge against `budget`, for one request.
    pub(crate) fn new(budget: ClientBudget) -> Arc<AnswerCharge> {
        Arc::new(AnswerCharge {
            budget,
            state: Mutex::default(),
        })
    }

    /// `answer`, the message the request's task made, counted against the
    /// budget (the bytes the reader counted become its own), ready to go
    /// out; why not, when the reader dropped the result or the message does
    /// not fit.
    pub(crate) fn settle(&self, answer: Value) -> Result<Outgoing, String> {
        let decided = std::mem::take(&mut *self.state.lock().unwrap());
        let held = match decided {
            Decided::Refused(why) => return Err(why),
            Decided::Kept(mut held) => held.settle(&answer).map(|()| held),
            Decided::Nothing => self.budget.hold(&answer),
        }?;
        Ok(Outgoing {
            msg: answer,
            held: Some(held),
        })
    }

    /// Gives back what the reader counted (the request was cancelled, or
    /// its task ended without an answer): nothing waits for it any more.
    pub(crate) fn release(&self) {
        drop(std::mem::take(&mut *self.state.lock().unwrap()));
    }
}

impl AnswerGate for AnswerCharge {
    fn admit(&self, bytes: usize) -> Admission {
        match self.budget.admit(bytes) {
            Ok(held) => {
                *self.state.lock().unwrap() = Decided::Kept(held);
                let pressure = self.budget.pressure();
                if pressure.pressed() {
                    Admission::KeepAndHoldOff(pressure)
                } else {
                    Admission::Keep
                }
            }
            Err(why) => {
                *self.state.lock().unwrap() = Decided::Refused(why.clone());
                Admission::Refuse(why)
            }
        }
    }
}

/// Releases a charge when its request's task ends, answered or not (an
/// aborted task runs no more code, but drops this).
pub(crate) struct ReleaseOnDrop(pub(crate) Arc<AnswerCharge>);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.0.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{Total, COPIES_WHILE_HANDLED};
    use serde_json::json;

    fn refused(admission: Admission) -> Option<String> {
        match admission {
            Admission::Refuse(why) => Some(why),
            _ => None,
        }
    }

    #[test]
    fn an_answer_is_counted_with_its_copies_from_the_read_until_settled() {
        let total = Total::new(10_000);
        let budget = ClientBudget::new(1_000, total.clone());
        let charge = AnswerCharge::new(budget.clone());
        assert!(matches!(charge.admit(300), Admission::Keep));
        assert_eq!(total.held(), 300 * COPIES_WHILE_HANDLED);
        // Settled: counted once, at the size of the message that goes out.
        let answer = json!({"id": 1, "result": "x".repeat(100)});
        let out = charge.settle(answer.clone()).unwrap();
        assert_eq!(total.held(), answer.to_string().len());
        drop(out);
        assert_eq!(total.held(), 0);
    }

    #[test]
    fn what_does_not_fit_when_read_is_refused_and_settles_as_busy() {
        let total = Total::new(10_000);
        let budget = ClientBudget::new(1_000, total.clone());
        let first = AnswerCharge::new(budget.clone());
        assert!(refused(first.admit(700)).is_none());
        let second = AnswerCharge::new(budget.clone());
        let why = refused(second.admit(400)).expect("past the client's budget");
        assert!(why.contains("busy"), "{why}");
        assert_eq!(second.settle(json!({})).unwrap_err(), why);
        // The refusal counted nothing; the first answer still holds its own.
        assert_eq!(total.held(), 700 * COPIES_WHILE_HANDLED);
        first.release();
        assert_eq!(total.held(), 0);
    }

    #[test]
    fn an_answer_alone_goes_whole_past_the_budget_even_when_it_grew() {
        let total = Total::new(10_000);
        let budget = ClientBudget::new(1_000, total.clone());
        let charge = AnswerCharge::new(budget.clone());
        assert!(
            refused(charge.admit(1_500)).is_none(),
            "alone, within the total"
        );
        // The message that goes out is larger than what was read (another
        // id, framing): still alone, still whole.
        let out = charge.settle(json!("x".repeat(1_600))).unwrap();
        assert_eq!(total.held(), 1_602);
        // Beside it, nothing more fits.
        let other = AnswerCharge::new(budget);
        assert!(refused(other.admit(10)).is_some());
        drop(out);
        assert_eq!(total.held(), 0);
    }

    #[test]
    fn copies_past_the_budget_hold_the_reader_off_until_handled() {
        let total = Total::new(10_000);
        let budget = ClientBudget::new(1_000, total.clone());
        let one = AnswerCharge::new(budget.clone());
        assert!(matches!(one.admit(300), Admission::Keep));
        let two = AnswerCharge::new(budget.clone());
        let Admission::KeepAndHoldOff(pressure) = two.admit(300) else {
            panic!("600 held with 1200 of copies is past a budget of 1000");
        };
        assert!(!pressure.is_relieved());
        // Handled (settled), the first gives its copies back: 600 held and
        // 600 of copies still pass 1000.
        let out_one = one.settle(json!("x".repeat(298))).unwrap();
        assert!(!pressure.is_relieved());
        let out_two = two.settle(json!("x".repeat(298))).unwrap();
        assert!(pressure.is_relieved());
        drop((out_one, out_two));
        assert_eq!(total.held(), 0);
    }

    #[tokio::test]
    async fn the_hold_off_ends_when_the_copies_are_given_back() {
        let budget = ClientBudget::new(1_000, Total::new(10_000));
        let charge = AnswerCharge::new(budget.clone());
        let Admission::KeepAndHoldOff(pressure) = charge.admit(900) else {
            panic!("2700 counted is past a budget of 1000");
        };
        let waiting = tokio::spawn(pressure.relieved());
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        // A task that ends without settling gives everything back.
        drop(ReleaseOnDrop(charge));
        waiting.await.unwrap();
    }
}
