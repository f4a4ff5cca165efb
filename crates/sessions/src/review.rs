//! The reviewer's verdict and findings, read from a `submit_review` call or
//! from the answer text, and the `next` / `next_reason` advice
//! (`docs/sessions.md#review-sessions`).
//!
//! Text parsing is tolerant: the last fenced code block (```json or plain
//! ```) that holds an object with a `verdict`, else the last bare `{...}`
//! object with a `verdict`; trailing commas are forgiven. Verdicts are
//! normalized: case and `-`/space are ignored, `APPROVED`, `LGTM` and
//! `ACCEPT` read as `APPROVE`, `CHANGES_REQUESTED` as `REQUEST_CHANGES`;
//! any other verdict is kept as written (upper-cased).

use serde_json::{json, Value};

use super::params::Next;

/// A review: `{verdict, blocks, summary?}`; `verdict` is `null` when the
/// reviewer gave none.
pub fn from_submit(arguments: &Value) -> Value {
    normalize(arguments)
}

/// How much of the end of an answer [`from_text`] looks at: the review
/// is at its end, and an answer is not trusted to be small.
const MAX_TEXT_BYTES: usize = 256 * 1024;

/// Finds the review in the final answer text (its last
/// `MAX_TEXT_BYTES`); `None` when there is none.
pub fn from_text(text: &str) -> Option<Value> {
    let mut from = text.len().saturating_sub(MAX_TEXT_BYTES);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    let text = &text[from..];
    let mut candidates: Vec<String> = Vec::new();
    // Fenced blocks.
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let body_start = after.find('\n').map_or(after.len(), |i| i + 1);
        let body = &after[body_start..];
        let Some(end) = body.find("```") else { break };
        candidates.push(body[..end].to_owned());
        rest = &body[end + 3..];
    }
    for candidate in candidates.iter().rev() {
        if let Some(v) = parse_object(candidate) {
            return Some(normalize(&v));
        }
    }
    // A bare object: the text from a `{` to the last `}`. Only the `{`
    // that this `}` closes can start one (see `opening_brace`): one parse,
    // not one per `{` (which made text full of braces quadratic).
    let end = text.rfind('}')?;
    let start = opening_brace(text.as_bytes(), end)?;
    parse_object(&text[start..=end]).map(|v| normalize(&v))
}

/// The `{` that the `}` at `end` closes, scanning back from it: braces in
/// JSON strings (between unescaped `"`) do not count. When `text[i..=end]`
/// is one JSON object (trailing commas or not), this finds that `i`, and
/// no other `i` can be one; `None` when the braces do not balance.
fn opening_brace(text: &[u8], end: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    for i in (0..=end).rev() {
        match text[i] {
            b'"' => {
                let backslashes = text[..i].iter().rev().take_while(|&&b| b == b'\\').count();
                if backslashes % 2 == 0 {
                    in_string = !in_string;
                }
            }
            b'}' if !in_string => depth += 1,
            b'{' if !in_string => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Parses an object with a `verdict` key, forgiving trailing commas.
fn parse_object(text: &str) -> Option<Value> {
    let text = text.trim();
    let try_parse = |t: &str| -> Option<Value> {
        let v: Value = serde_json::from_str(t).ok()?;
        let has = v
            .as_object()
            .is_some_and(|o| o.keys().any(|k| k.eq_ignore_ascii_case("verdict")));
        has.then_some(v)
    };
    try_parse(text).or_else(|| try_parse(&strip_trailing_commas(text)))
}

fn strip_trailing_commas(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    for (i, &c) in chars.iter().enumerate() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        if c == '"' {
            in_string = true;
        }
        if c == ',' {
            let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
            if matches!(next, Some('}') | Some(']')) {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// Normalizes a verdict string (see the module doc).
pub fn normalize_verdict(v: &str) -> Option<String> {
    let up: String = v
        .trim()
        .chars()
        .map(|c| {
            if c == '-' || c == ' ' {
                '_'
            } else {
                c.to_ascii_uppercase()
            }
        })
        .collect();
    if up.is_empty() {
        return None;
    }
    Some(match up.as_str() {
        "APPROVE" | "APPROVED" | "LGTM" | "ACCEPT" | "ACCEPTED" => "APPROVE".into(),
        "REQUEST_CHANGES" | "CHANGES_REQUESTED" | "REQUEST_CHANGE" | "CHANGES" => {
            "REQUEST_CHANGES".into()
        }
        _ => up,
    })
}

fn normalize(v: &Value) -> Value {
    let get = |k: &str| {
        v.as_object().and_then(|o| {
            o.iter()
                .find(|(key, _)| key.eq_ignore_ascii_case(k))
                .map(|(_, v)| v.clone())
        })
    };
    let verdict = get("verdict")
        .and_then(|x| x.as_str().map(str::to_owned))
        .and_then(|s| normalize_verdict(&s));
    let blocks = match get("blocks").or_else(|| get("findings")) {
        Some(Value::Array(a)) => a
            .into_iter()
            .map(|b| match b {
                Value::String(s) => json!({"title": s, "body": s}),
                other => other,
            })
            .collect(),
        _ => Vec::new(),
    };
    let mut out = json!({ "verdict": verdict, "blocks": blocks });
    if let Some(Value::String(s)) = get("summary") {
        out["summary"] = Value::String(s);
    }
    out
}

/// An empty review (no verdict, no findings).
pub fn empty() -> Value {
    json!({ "verdict": null, "blocks": [] })
}

/// Whether `skill` is a peer skill (its verdict is advisory).
pub fn is_peer(skill: &str) -> bool {
    matches!(skill, "review-think" | "review-pr")
}

/// The facts `next` is decided from.
pub struct Outcome<'a> {
    /// The round's status.
    pub status: &'a str,
    /// The review, when completed.
    pub review: Option<&'a Value>,
    /// The failure reason, when failed.
    pub failure_reason: Option<&'a str>,
    /// Timeout can be resumed.
    pub recoverable: bool,
    /// The skill.
    pub skill: &'a str,
    /// The current round number.
    pub round: u32,
    /// Rounds allowed for plan/impl before a stalemate.
    pub max_rounds: u32,
}

/// `(next, next_reason)` for a round (see the module docs).
pub fn next(o: &Outcome<'_>) -> (Next, String) {
    match o.status {
        "running" => (Next::Running, "reviewer_running".into()),
        "completed" => {
            if is_peer(o.skill) {
                return (Next::CrossCheck, "peer_verdict_is_advisory".into());
            }
            let review = o.review.cloned().unwrap_or_else(empty);
            let verdict = review["verdict"].as_str().map(str::to_owned);
            let blocks = review["blocks"].as_array().map_or(0, Vec::len);
            let approved = verdict.as_deref() == Some("APPROVE");
            if approved {
                return (Next::Done, "approved".into());
            }
            if o.round >= o.max_rounds {
                return (Next::Done, "stalemate".into());
            }
            match verdict {
                Some(v) if v == "REQUEST_CHANGES" => (Next::Respond, "open_issues".into()),
                Some(v) => (Next::Respond, format!("verdict_{}", v.to_ascii_lowercase())),
                None if blocks > 0 => (Next::Respond, "open_issues".into()),
                None => (Next::AskUser, "missing_verdict".into()),
            }
        }
        "failed" => (
            Next::Stopped,
            o.failure_reason.unwrap_or("turn_failed").to_owned(),
        ),
        "stalled" => (Next::Stopped, "stalled".into()),
        "timeout" => {
            if o.recoverable {
                (Next::Stopped, "recoverable_timeout".into())
            } else {
                (Next::Stopped, "timeout".into())
            }
        }
        "ended" => (Next::Done, "ended".into()),
        _ => (Next::Stopped, o.status.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fenced_and_bare_and_tolerant() {
        let r =
            from_text("ok\n```json\n{\"verdict\": \"approved\", \"blocks\": [],}\n```").unwrap();
        assert_eq!(r["verdict"], "APPROVE");
        let r = from_text("x {\"Verdict\": \"request-changes\", \"blocks\": [{\"title\": \"a\", \"body\": \"b\"}]} y").unwrap();
        assert_eq!(r["verdict"], "REQUEST_CHANGES");
        assert_eq!(r["blocks"][0]["title"], "a");
        let r = from_text("```\n{\"verdict\": \"needs discussion\"}\n```").unwrap();
        assert_eq!(r["verdict"], "NEEDS_DISCUSSION");
        assert!(from_text("no verdict here").is_none());
    }

    /// Runs `from_text` on a thread of its own; `None` when it has not
    /// returned within 30 s.
    fn from_text_within_30s(text: String) -> Option<Option<Value>> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(from_text(&text));
        });
        rx.recv_timeout(std::time::Duration::from_secs(30)).ok()
    }

    #[test]
    fn many_braces_are_read_in_bounded_time() {
        for text in ["{}".repeat(200_000), format!("{}}}", "{".repeat(200_000))] {
            let r = from_text_within_30s(text);
            assert_eq!(r, Some(None), "no verdict, and an answer in time");
        }
        // A verdict after a long text is still found, and one at the end of
        // many braces too.
        let text = format!("{}\n{{\"verdict\": \"approve\"}}", "x".repeat(1_000_000));
        assert_eq!(from_text(&text).unwrap()["verdict"], "APPROVE");
        let text = format!("{}{{\"verdict\": \"lgtm\",}}", "{}".repeat(200_000));
        assert_eq!(
            from_text_within_30s(text).unwrap().unwrap()["verdict"],
            "APPROVE"
        );
    }

    fn n(status: &str, review: Value, skill: &str, round: u32) -> (&'static str, String) {
        let (next, reason) = next(&Outcome {
            status,
            review: Some(&review),
            failure_reason: None,
            recoverable: false,
            skill,
            round,
            max_rounds: 5,
        });
        (next.as_str(), reason)
    }

    #[test]
    fn next_table() {
        let ap = json!({"verdict": "APPROVE", "blocks": []});
        let rc = json!({"verdict": "REQUEST_CHANGES", "blocks": [{}]});
        let other = json!({"verdict": "NEEDS_INFO", "blocks": []});
        let none = json!({"verdict": null, "blocks": []});
        let findings = json!({"verdict": null, "blocks": [{"title": "x"}]});
        assert_eq!(
            n("completed", ap.clone(), "review-plan", 1),
            ("done", "approved".into())
        );
        assert_eq!(
            n("completed", rc.clone(), "review-impl", 1),
            ("respond", "open_issues".into())
        );
        assert_eq!(
            n("completed", other, "review-plan", 1),
            ("respond", "verdict_needs_info".into())
        );
        assert_eq!(
            n("completed", none.clone(), "review-plan", 1),
            ("ask_user", "missing_verdict".into())
        );
        assert_eq!(
            n("completed", findings, "review-plan", 1),
            ("respond", "open_issues".into())
        );
        assert_eq!(
            n("completed", rc.clone(), "review-plan", 5),
            ("done", "stalemate".into())
        );
        assert_eq!(
            n("completed", ap, "review-think", 1),
            ("cross_check", "peer_verdict_is_advisory".into())
        );
        assert_eq!(
            n("running", none.clone(), "review-plan", 1),
            ("running", "reviewer_running".into())
        );
        assert_eq!(
            n("stalled", none.clone(), "review-plan", 1),
            ("stopped", "stalled".into())
        );
        assert_eq!(
            n("timeout", none.clone(), "review-plan", 1),
            ("stopped", "timeout".into())
        );
        assert_eq!(
            n("failed", none, "review-plan", 1),
            ("stopped", "turn_failed".into())
        );
    }
}
