//! Words as the search compares them: split, lower-cased, stop words left
//! out, suffixes stripped, and the few synonyms tool descriptions and
//! queries disagree on most.

/// Words that say nothing about a tool ("a tool to get the weather in a
/// city", "Use this to ..."): left out of queries and of tools alike.
const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can", "could",
    "do", "does", "for", "from", "give", "has", "have", "how", "i", "if", "in", "into", "is", "it",
    "its", "let", "like", "me", "mcp", "my", "need", "not", "of", "on", "or", "please", "should",
    "so", "some", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
    "those", "to", "tool", "tools", "up", "use", "used", "using", "want", "was", "we", "what",
    "when", "where", "which", "who", "will", "with", "would", "you", "your",
];

/// Words that mean the same to someone looking for a tool, one group a
/// line; a query word of a group also matches the group's other words, at
/// [`super::SYNONYM_WEIGHT`]. Kept small on purpose: each group is a verb
/// or noun queries use where tool descriptions use another (a model asks
/// to "download a web page", the tool "fetches a URL"). Stemmed when used.
const SYNONYMS: &[&[&str]] = &[
    &["download", "fetch", "get", "retrieve"],
    &["remember", "memorize", "memory", "store", "save", "create"],
    &["file", "path"],
    &["page", "url", "web", "website", "internet"],
    &["time", "clock", "date"],
    &["delete", "remove", "erase"],
    &["create", "make"],
    &["folder", "directory"],
    &["search", "find", "look", "lookup"],
];

/// The words of `text` as the search compares them: [`split`], stop words
/// left out, each [`stem`]med.
pub(super) fn terms(text: &str) -> Vec<String> {
    split(text)
        .into_iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .map(|w| stem(&w))
        .collect()
}

/// Lower-case words of `text`: split at anything not alphanumeric, at `_`
/// and `-`, and where a lower-case letter meets an upper-case one
/// (`getWeather` → `get`, `weather`).
pub(super) fn split(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        previous_lower = c.is_lowercase() || c.is_numeric();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// A light suffix-stripping stemmer for English, enough to make a query's
/// "reading files" meet a tool's "Read the file": plural `-s`, `-es`,
/// `-ies`; then one of `-ing`, `-ed`, `-er`; then a doubled last consonant
/// (`running` → `run`) and a final `-e` (`create`, `created`, `creates` all
/// give `creat`). Never shortens a word below three letters; words of
/// anything but ASCII letters are kept as they are. Not a dictionary
/// stemmer: only both sides being stemmed alike matters.
pub(super) fn stem(word: &str) -> String {
    if word.len() <= 3 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return word.to_owned();
    }
    let mut w = word.to_owned();
    if w.ends_with("ies") && w.len() > 4 {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if w.ends_with("es")
        && ["s", "x", "z", "ch", "sh"]
            .iter()
            .any(|end| w[..w.len() - 2].ends_with(end))
    {
        w.truncate(w.len() - 2);
    } else if w.ends_with('s') && !["ss", "us", "is"].iter().any(|end| w.ends_with(end)) {
        w.truncate(w.len() - 1);
    }
    let mut stripped = false;
    for suffix in ["ing", "ed", "er"] {
        if w.ends_with(suffix) && w.len() >= suffix.len() + 3 {
            w.truncate(w.len() - suffix.len());
            stripped = true;
            break;
        }
    }
    let bytes = w.as_bytes();
    if stripped
        && bytes.len() > 3
        && bytes[bytes.len() - 1] == bytes[bytes.len() - 2]
        && !b"aeioulsz".contains(&bytes[bytes.len() - 1])
    {
        w.pop();
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    w
}

/// The other words of `term`'s synonym groups, stemmed (`term` is one
/// already).
pub(super) fn synonyms(term: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for group in SYNONYMS {
        let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
        if stems.iter().any(|s| s == term) {
            out.extend(stems.into_iter().filter(|s| s != term));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}
