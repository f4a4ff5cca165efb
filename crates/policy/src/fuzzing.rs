//! Entry point for the `redact` fuzz target in `fuzz/` and the replay of
//! its corpus: arbitrary bytes through the redactor, checking that a
//! planted token never survives. Not part of the crate's API; stable only
//! in name. Runs on the calling thread.

use crate::redact::{RedactRule, Redactor};

/// Splits fuzz input into a few control bytes and the rest.
fn take<const N: usize>(data: &[u8]) -> ([u8; N], &[u8]) {
    let mut head = [0u8; N];
    let n = data.len().min(N);
    head[..n].copy_from_slice(&data[..n]);
    (head, &data[n..])
}

/// A secret that must never survive redaction, wherever it is put between
/// spaces.
const PLANTED: &str = "ghp_Zq3xW8rT5yU1iO9pA2sD4fG6hJ7kL0mN3bV8";

/// Text for the redactor. Byte 0: bit 0 adds an extra rule whose pattern
/// is the first line of the rest (a bad pattern must be `CONFIG_INVALID`);
/// bit 1 plants a known token, between spaces, at a position from byte 1.
/// The text is redacted whole and as segments split at `\u{1}`: nothing
/// replaced means nothing changed, the planted token never survives.
pub fn redact(data: &[u8]) -> Result<(), String> {
    let ([flags, at], rest) = take::<2>(data);
    let mut text = String::from_utf8_lossy(rest).into_owned();
    let redactor = if flags & 1 == 1 {
        let (pattern, body) = text.split_once('\n').unwrap_or((&text, ""));
        let rule = RedactRule {
            name: "fuzz".to_owned(),
            pattern: pattern.to_owned(),
        };
        let made = Redactor::new(&[rule], "fuzz");
        text = body.to_owned();
        match made {
            Ok(r) => r,
            Err(e) if e.code() == "CONFIG_INVALID" => return Ok(()),
            Err(e) => return Err(format!("{}: {e}", e.code())),
        }
    } else {
        Redactor::default()
    };
    if flags & 2 == 2 {
        let mut i = usize::from(at) * text.len() / 255;
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        text.insert_str(i, &format!(" {PLANTED} "));
    }
    let (out, n) = redactor.redact(&text);
    if n == 0 && out != text {
        return Err("nothing redacted, yet the text changed".to_owned());
    }
    if out.contains(PLANTED) {
        return Err(format!("the planted token survived: {out:?}"));
    }
    let segments: Vec<&str> = text.split('\u{1}').collect();
    let (outs, n) = redactor.redact_segments(&segments);
    if outs.len() != segments.len() {
        return Err(format!(
            "{} segments in, {} out",
            segments.len(),
            outs.len()
        ));
    }
    if n == 0 && outs.iter().zip(&segments).any(|(o, s)| o != s) {
        return Err("nothing redacted, yet a segment changed".to_owned());
    }
    if let Some(o) = outs.iter().find(|o| o.contains(PLANTED)) {
        return Err(format!("the planted token survived in a segment: {o:?}"));
    }
    Ok(())
}
