//! The known name a misspelt one most likely meant: what a config key
//! (`config::keys`) and a host's option (`contract::unknown_option`) that
//! mcpmux does not know are refused with, so that a typo fails naming the
//! fix instead of being silently ignored.

/// The name of `known` most like `name`, when one is close enough to be a
/// typo of it: compared without case, by Damerau-Levenshtein distance
/// relative to length (at least 0.6 alike). `timeoutMS` finds `timeoutMs`,
/// `timeout_secs` finds `timeout_seconds`.
pub(crate) fn nearest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let name = name.to_lowercase();
    known
        .into_iter()
        .map(|k| {
            (
                k,
                strsim::normalized_damerau_levenshtein(&name, &k.to_lowercase()),
            )
        })
        .filter(|(_, score)| *score >= 0.6)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names_are_found_far_ones_are_not() {
        let known = ["timeoutMs", "maxTotalTimeoutMs", "taskTtlMs", "signal"];
        assert_eq!(nearest("timeoutMS", known), Some("timeoutMs"));
        assert_eq!(nearest("timout", known), Some("timeoutMs"));
        assert_eq!(nearest("maxTotalTimeout", known), Some("maxTotalTimeoutMs"));
        assert_eq!(nearest("colour", known), None);
        assert_eq!(nearest("x", std::iter::empty()), None);
    }
}
