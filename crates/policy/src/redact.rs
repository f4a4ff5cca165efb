//! Redaction of tool output: secrets become `[REDACTED:<rule>]` before the
//! model sees the output and before anything is stored.
//!
//! Built-in rules, in priority order (when two matches overlap, the union is
//! redacted under the name of the one that starts first, or is longer, or
//! comes first in this list): `private_key`, `aws_access_key_id`,
//! `aws_secret_access_key`, `github_token`, `gitlab_token`, `slack_token`,
//! `stripe_key`, `anthropic_key`, `openai_key`, `jwt`, `url_password`,
//! `authorization`; then the operator's extra rules; then `high_entropy`;
//! then `config` (a session policy's redactor only: the values mcpmux knows
//! to be secret, `mcpmux_core::internal::secrets`, matched literally).
//!
//! `high_entropy` flags a run of `[A-Za-z0-9+/_-]` (with any `=` padding) that, with `=`, `-`, `_`,
//! `/` and `+` trimmed from its ends, is at least [`HIGH_ENTROPY_MIN_LEN`]
//! characters long, uses at least two of lower case, upper case and digits,
//! is not only hex digits and dashes (commit SHAs, UUIDs and hashes stay),
//! has a Shannon entropy of at least [`HIGH_ENTROPY_MIN_BITS`] bits per
//! character, and does not read like words ([`looks_like_words`]: split as
//! identifiers are written, at least 40% of it is in pieces of three or more
//! letters with vowels and no four consonants in a row, and its letter
//! pieces average three or more letters — so identifiers such as
//! `getUserAccount2Token`, constants and paths stay). Not caught by this
//! check: random keys shorter than 24 characters or made of hex digits only
//! (a labelled one still is by its rule), and the few random tokens that
//! happen to read like words (measured at well under 1% of random 32- to
//! 64-character tokens by the property tests).
//!
//! Rules whose pattern has a group named `secret` redact only that group, so
//! `Authorization: Bearer x` keeps the header name and a URL keeps its user
//! and host.
//!
//! Text is redacted as a list of segments (the string fields of a result, in
//! order). Each segment is searched on its own and the segments are also
//! searched glued together, so a secret split across two content blocks is
//! caught: its first part becomes the marker and the rest is removed. The
//! glued search uses the named rules only, not `high_entropy`: two ordinary
//! words glued together too often look random.

use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use mcpmux_core::error::Error;

/// Shortest token the high-entropy check looks at.
pub const HIGH_ENTROPY_MIN_LEN: usize = 24;
/// Least Shannon entropy, in bits per character, of a flagged token.
pub const HIGH_ENTROPY_MIN_BITS: f64 = 3.5;

/// An extra redaction rule from the config (`[[session.redact]]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedactRule {
    /// Shown in the marker: `[REDACTED:<name>]`. Letters, digits, `_`, `-`, `.`.
    pub name: String,
    /// A `regex` crate pattern; a group named `secret` limits what is replaced.
    pub pattern: String,
}

struct Rule {
    name: String,
    regex: Regex,
    /// An extra test on the text to be replaced, for rules whose pattern
    /// alone would catch ordinary words.
    check: Option<fn(&str) -> bool>,
}

/// A compiled set of rules. Cheap to share by reference; the default has
/// the built-in rules only.
#[derive(Default)]
pub struct Redactor {
    extra: Vec<Rule>,
    /// Also replace the process-wide known secrets ([`mcpmux_core::internal::secrets`]) as
    /// rule `config`, read at each call so values learned later count.
    config_secrets: bool,
}

/// The rule index of a known config secret: after every other rule.
const CONFIG_RULE: usize = usize::MAX;

/// One region to replace, in byte offsets of the searched text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hit {
    start: usize,
    end: usize,
    /// Index into the combined rule list; lower wins on overlap.
    rule: usize,
}

fn has_digit(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_digit())
}

fn digit_or_upper(s: &str) -> bool {
    s.bytes()
        .any(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
}

/// A header value is a secret when it has a scheme (`Bearer x`) or looks
/// like a token (a digit in 12+ characters), not a word like `required`.
fn authorization_value(s: &str) -> bool {
    s.contains(char::is_whitespace) || (s.len() >= 12 && has_digit(s))
}

fn builtin() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        let rule = |name: &str, pattern: &str, check: Option<fn(&str) -> bool>| Rule {
            name: name.to_owned(),
            regex: Regex::new(pattern).expect("built-in redaction pattern"),
            check,
        };
        vec![
            rule(
                "private_key",
                // A whole block, or (cut off) the header and base64 lines after it.
                r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|(?:[ \t]*\r?\n(?:[A-Za-z0-9\-]+:[^\n]*|[A-Za-z0-9+/]{8,}={0,2}|[A-Za-z0-9+/]+={1,2}))*)",
                None,
            ),
            rule(
                "aws_access_key_id",
                r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|A3T[A-Z0-9])[A-Z0-9]{16}\b",
                None,
            ),
            rule(
                "aws_secret_access_key",
                r#"(?i:aws_?secret_?(?:access_?)?key|secret_?access_?key)["']?\s*[:=]\s*["']?(?P<secret>[A-Za-z0-9/+=]{30,})"#,
                None,
            ),
            rule(
                "github_token",
                r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{20,255})\b",
                None,
            ),
            rule(
                "gitlab_token",
                r"\b(?:glpat|gldt|glrt|glptt|glft|glsoat|glcbt|glimt|glagent|gloas)-[A-Za-z0-9_\-]{20,}",
                None,
            ),
            rule(
                "slack_token",
                r"\bxox[abposre]-[A-Za-z0-9\-]{10,}|https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]+",
                None,
            ),
            rule(
                "stripe_key",
                r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b|\bwhsec_[A-Za-z0-9]{24,}\b",
                None,
            ),
            rule("anthropic_key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}", None),
            rule(
                "openai_key",
                r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",
                Some(digit_or_upper),
            ),
            rule(
                "jwt",
                r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*",
                None,
            ),
            rule(
                "url_password",
                r#"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@"'<>]*:(?P<secret>[^\s/?#@"'<>]+)@"#,
                None,
            ),
            rule(
                "authorization",
                r#"(?i:\b(?:proxy-)?authorization)["']?\s*[:=]\s*["']?(?P<secret>(?i:bearer|basic|token|digest|bot|negotiate|apikey)[ \t]+[A-Za-z0-9._~+/=\-]+|[A-Za-z0-9._~+/=\-]{12,})"#,
                Some(authorization_value),
            ),
            rule(
                "authorization",
                r"\bBearer[ \t]+(?P<secret>[A-Za-z0-9._~+/\-]{12,}=*)",
                Some(has_digit),
            ),
        ]
    })
}

/// The built-in rule names, in priority order (`high_entropy` last).
pub fn builtin_rule_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = Vec::new();
    for r in builtin() {
        if !names.contains(&r.name.as_str()) {
            names.push(&r.name);
        }
    }
    names.push("high_entropy");
    names
}

fn token_regex() -> &'static Regex {
    static TOKEN: OnceLock<Regex> = OnceLock::new();
    TOKEN.get_or_init(|| Regex::new(r"[A-Za-z0-9+/_\-]{24,}=*").expect("token pattern"))
}

/// Whether `token` passes the high-entropy check described in the module docs.
pub fn is_high_entropy(token: &str) -> bool {
    let t = token.trim_matches(|c| matches!(c, '=' | '-' | '_' | '/' | '+'));
    if t.len() < HIGH_ENTROPY_MIN_LEN {
        return false;
    }
    let lower = t.bytes().any(|b| b.is_ascii_lowercase());
    let upper = t.bytes().any(|b| b.is_ascii_uppercase());
    let digit = has_digit(t);
    if (lower as u8 + upper as u8 + digit as u8) < 2 {
        return false;
    }
    if t.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
        return false;
    }
    if shannon_bits(t) < HIGH_ENTROPY_MIN_BITS {
        return false;
    }
    !looks_like_words(t)
}

fn shannon_bits(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[b as usize] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

/// The letter pieces of a token, split the way identifiers are written:
/// `parseHTTPResponse2_MAX` gives `parse`, `HTTP`, `Response`, `MAX`.
fn pieces(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_uppercase() {
            let mut j = i;
            while j < b.len() && b[j].is_ascii_uppercase() {
                j += 1;
            }
            if j < b.len() && b[j].is_ascii_lowercase() {
                // The last capital starts the next word: `HTTPResponse`.
                if j - 1 > i {
                    out.push(&s[i..j - 1]);
                }
                let mut k = j;
                while k < b.len() && b[k].is_ascii_lowercase() {
                    k += 1;
                }
                out.push(&s[j - 1..k]);
                i = k;
            } else {
                out.push(&s[i..j]);
                i = j;
            }
        } else if b[i].is_ascii_lowercase() {
            let mut j = i;
            while j < b.len() && b[j].is_ascii_lowercase() {
                j += 1;
            }
            out.push(&s[i..j]);
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// A piece that reads like a word: three or more letters, a vowel in at
/// least one of five, and never four consonants in a row.
fn word_like(piece: &str) -> bool {
    let vowel = |c: u8| {
        matches!(
            c.to_ascii_lowercase(),
            b'a' | b'e' | b'i' | b'o' | b'u' | b'y'
        )
    };
    let b = piece.as_bytes();
    let vowels = b.iter().filter(|&&c| vowel(c)).count();
    let mut run = 0;
    let mut cluster = false;
    for &c in b {
        run = if vowel(c) { 0 } else { run + 1 };
        cluster |= run >= 4;
    }
    b.len() >= 3 && vowels * 5 >= b.len() && !cluster
}

/// Whether a token reads like an identifier or a path made of words: at
/// least 40% of it is in word-like pieces and its letter pieces are 3 or
/// more letters long on average. Random tokens rarely are (measured in
/// `core/tests/policy_redact_props.rs`).
pub fn looks_like_words(token: &str) -> bool {
    let pieces = pieces(token);
    if pieces.is_empty() {
        return false;
    }
    let letters: usize = pieces.iter().map(|p| p.len()).sum();
    let words: usize = pieces
        .iter()
        .filter(|p| word_like(p))
        .map(|p| p.len())
        .sum();
    words * 10 >= token.len() * 4 && letters >= pieces.len() * 3
}

impl Redactor {
    /// The built-in rules plus `extra`; a bad rule is `CONFIG_INVALID`
    /// naming `origin` and the rule.
    pub fn new(extra: &[RedactRule], origin: &str) -> Result<Redactor, Error> {
        let extra = extra
            .iter()
            .enumerate()
            .map(|(i, r)| compile_rule(r, &format!("{origin}: redact[{i}]")))
            .collect::<Result<_, _>>()?;
        Ok(Redactor {
            extra,
            config_secrets: false,
        })
    }

    /// The same redactor that also replaces the known config secrets
    /// (`mcpmux_core::internal::secrets::known`) with `[REDACTED:config]`, found even
    /// when split between two segments.
    pub fn with_config_secrets(mut self) -> Redactor {
        self.config_secrets = true;
        self
    }

    fn rule_name(&self, index: usize) -> &str {
        let b = builtin();
        if index == CONFIG_RULE {
            "config"
        } else if index < b.len() {
            &b[index].name
        } else if index < b.len() + self.extra.len() {
            &self.extra[index - b.len()].name
        } else {
            "high_entropy"
        }
    }

    /// Every region of `text` to replace (not merged); `entropy` adds the
    /// high-entropy check to the named rules.
    fn hits(&self, text: &str, entropy: bool) -> Vec<Hit> {
        let mut hits = Vec::new();
        for (index, rule) in builtin().iter().chain(self.extra.iter()).enumerate() {
            let secret_group = rule.regex.capture_names().any(|n| n == Some("secret"));
            if secret_group {
                for caps in rule.regex.captures_iter(text) {
                    if let Some(m) = caps.name("secret") {
                        if rule.check.is_none_or(|f| f(m.as_str())) {
                            hits.push(Hit {
                                start: m.start(),
                                end: m.end(),
                                rule: index,
                            });
                        }
                    }
                }
            } else {
                for m in rule.regex.find_iter(text) {
                    if !m.is_empty() && rule.check.is_none_or(|f| f(m.as_str())) {
                        hits.push(Hit {
                            start: m.start(),
                            end: m.end(),
                            rule: index,
                        });
                    }
                }
            }
        }
        if self.config_secrets {
            for (start, end) in mcpmux_core::internal::secrets::known().find(text) {
                hits.push(Hit {
                    start,
                    end,
                    rule: CONFIG_RULE,
                });
            }
        }
        let entropy_rule = builtin().len() + self.extra.len();
        for m in token_regex().find_iter(text).filter(|_| entropy) {
            if is_high_entropy(m.as_str()) {
                hits.push(Hit {
                    start: m.start(),
                    end: m.end(),
                    rule: entropy_rule,
                });
            }
        }
        hits
    }

    /// Redacts one text; returns it and the number of regions replaced.
    pub fn redact(&self, text: &str) -> (String, usize) {
        let (mut out, n) = self.redact_segments(&[text]);
        (out.pop().unwrap_or_default(), n)
    }

    /// Redacts segments that a reader sees one after another (the text
    /// fields of one result), catching secrets split between them.
    pub fn redact_segments(&self, segments: &[&str]) -> (Vec<String>, usize) {
        // Offsets of each segment in the glued text; the separate view puts
        // one '\n' between segments, so its offsets are glued + index.
        let mut starts = Vec::with_capacity(segments.len());
        let mut glued = String::new();
        for s in segments {
            starts.push(glued.len());
            glued.push_str(s);
        }
        let total = glued.len();
        let separate = segments.join("\n");
        let to_glued = |q: usize| -> usize {
            let i = starts
                .iter()
                .enumerate()
                .rposition(|(i, &g)| g + i <= q)
                .unwrap_or(0);
            let end = starts[i] + segments[i].len();
            (q - i).min(end)
        };
        let mut hits: Vec<Hit> = self
            .hits(&separate, true)
            .into_iter()
            .map(|h| Hit {
                start: to_glued(h.start),
                end: to_glued(h.end),
                rule: h.rule,
            })
            .collect();
        if segments.len() > 1 {
            // A split secret may be found here only, even when the part
            // replaced lies in one segment (the password of a URL whose
            // scheme ended the previous block). The entropy check is left
            // out: two ordinary words glued together too often look random.
            hits.extend(self.hits(&glued, false));
        }
        hits.retain(|h| h.start < h.end && h.end <= total);
        let hits = merge(hits);

        let mut out = Vec::with_capacity(segments.len());
        for (i, seg) in segments.iter().enumerate() {
            let g0 = starts[i];
            let g1 = g0 + seg.len();
            let mut text = String::with_capacity(seg.len());
            let mut at = g0;
            for h in hits.iter().filter(|h| h.start < g1 && h.end > g0) {
                let from = h.start.max(g0);
                text.push_str(&glued[at..from]);
                if h.start >= g0 {
                    text.push_str(&format!("[REDACTED:{}]", self.rule_name(h.rule)));
                }
                at = h.end.min(g1);
            }
            text.push_str(&glued[at..g1]);
            out.push(text);
        }
        (out, hits.len())
    }
}

/// Sorts hits and merges overlapping ones. A merged hit is named after the
/// outermost one (earliest start, then longest), then the higher-priority
/// rule: `Authorization: Bearer <jwt>` is an `authorization`.
fn merge(mut hits: Vec<Hit>) -> Vec<Hit> {
    hits.sort_by_key(|h| (h.start, std::cmp::Reverse(h.end), h.rule));
    let mut out: Vec<Hit> = Vec::with_capacity(hits.len());
    for h in hits {
        match out.last_mut() {
            Some(last) if h.start < last.end => last.end = last.end.max(h.end),
            _ => out.push(h),
        }
    }
    out
}

fn compile_rule(rule: &RedactRule, at: &str) -> Result<Rule, Error> {
    if rule.name.is_empty()
        || !rule
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(Error::ConfigInvalid(format!(
            "{at}: field 'name' must be letters, digits, '_', '-' or '.' (got '{}')",
            rule.name
        )));
    }
    let regex = regex::RegexBuilder::new(&rule.pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| {
            let first = e.to_string();
            let first = first.lines().last().unwrap_or("invalid pattern").trim();
            Error::ConfigInvalid(format!(
                "{at}: field 'pattern' of rule '{}' is not a valid regex ({first})",
                rule.name
            ))
        })?;
    if regex.is_match("") {
        return Err(Error::ConfigInvalid(format!(
            "{at}: field 'pattern' of rule '{}' matches empty text",
            rule.name
        )));
    }
    Ok(Rule {
        name: rule.name.clone(),
        regex,
        check: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn red(text: &str) -> String {
        Redactor::default().redact(text).0
    }

    #[test]
    fn each_builtin_rule() {
        let cases = [
            ("key AKIAIOSFODNN7EXAMPLE here", "aws_access_key_id"),
            (
                "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key",
            ),
            (
                "token ghp_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ end",
                "github_token",
            ),
            ("glpat-xxxxxxxxxxxxxxxxxxxx1", "gitlab_token"),
            (
                "xoxb-123456789012-1234567890123-abcdefghijklmn",
                "slack_token",
            ),
            ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe_key"),
            (
                "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
                "openai_key",
            ),
            ("sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345", "anthropic_key"),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
                "private_key",
            ),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "jwt",
            ),
            ("postgres://admin:hunter2@db.internal:5432/app", "url_password"),
            ("Authorization: Bearer abc.def-123", "authorization"),
            (
                "blob Zq8rT2vLm9XwP4kN7bY3cH6dJ1fG5sA0 end",
                "high_entropy",
            ),
        ];
        for (text, rule) in cases {
            let out = red(text);
            assert!(
                out.contains(&format!("[REDACTED:{rule}]")),
                "{rule}: {text} -> {out}"
            );
        }
        // Labels, users and hosts stay.
        assert_eq!(
            red("postgres://admin:hunter2@db.internal:5432/app"),
            "postgres://admin:[REDACTED:url_password]@db.internal:5432/app"
        );
        assert_eq!(
            red("Authorization: Bearer abc.def-123"),
            "Authorization: [REDACTED:authorization]"
        );
    }

    #[test]
    fn ordinary_text_stays() {
        for text in [
            "deploy to us-east-1 and eu-west-2 via api.internal.example.com:8443",
            "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
            "id 123e4567-e89b-12d3-a456-426614174000",
            "fn getUserAccount2Token(userAccountId: u64) -> Result<String, Error>",
            "path /usr/lib/x86_64-linux-gnu/libssl.so.3 and src/policy/redact.rs",
            "Authorization: required for every endpoint",
            "the sk-learn-style-estimators-for-everyone package",
            "HTTP2_MAX_FRAME_SIZE_DEFAULT_1024 = 16384",
            "https://docs.example.com/guide?page=2#section-3",
        ] {
            assert_eq!(red(text), text);
        }
    }

    #[test]
    fn split_across_segments() {
        let r = Redactor::default();
        let (out, n) = r.redact_segments(&[
            "first block ends with ghp_abcdefghijklmn",
            "opqrstuvwxyzABCDEFGHIJ and goes on",
        ]);
        assert_eq!(n, 1);
        assert_eq!(out[0], "first block ends with [REDACTED:github_token]");
        assert_eq!(out[1], " and goes on");
        // A secret whole in one segment next to another keeps its boundaries.
        let (out, n) = r.redact_segments(&["AKIAIOSFODNN7EXAMPLE", "X"]);
        assert_eq!(
            (out[0].as_str(), out[1].as_str(), n),
            ("[REDACTED:aws_access_key_id]", "X", 1)
        );
        // Private key blocks split over blocks.
        let (out, _) = r.redact_segments(&[
            "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq",
            "hkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\nafter",
        ]);
        assert_eq!(out[0], "[REDACTED:private_key]");
        assert_eq!(out[1], "\nafter");
    }

    #[test]
    fn extra_rules() {
        let rules = [RedactRule {
            name: "ticket".into(),
            pattern: r"INC-(?P<secret>\d{6})".into(),
        }];
        let r = Redactor::new(&rules, "cfg").unwrap();
        assert_eq!(r.redact("see INC-123456").0, "see INC-[REDACTED:ticket]");
        let bad = Redactor::new(
            &[RedactRule {
                name: "x".into(),
                pattern: "(".into(),
            }],
            "cfg",
        )
        .err()
        .unwrap();
        assert_eq!(bad.code(), "CONFIG_INVALID");
        assert!(bad.to_string().contains("redact[0]"), "{bad}");
        let empty = Redactor::new(
            &[RedactRule {
                name: "x".into(),
                pattern: "a*".into(),
            }],
            "cfg",
        )
        .err()
        .unwrap();
        assert!(empty.to_string().contains("empty"), "{empty}");
    }

    #[test]
    fn names_in_priority_order() {
        let names = builtin_rule_names();
        assert_eq!(names.first(), Some(&"private_key"));
        assert_eq!(names.last(), Some(&"high_entropy"));
        assert_eq!(names.len(), 13);
    }
}
