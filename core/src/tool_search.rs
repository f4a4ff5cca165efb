//! Ranking tools for a query, for hosts and gateways with hundreds of
//! tools that show a model a search instead of the whole list.
//!
//! Okapi BM25 with fields (BM25F): a query word counts most in a tool's
//! name and title, then in its parameter names and its server's name, then
//! in its description, least in its parameters' descriptions (the prose,
//! whose counts are normalized by its length and grow sublinearly). Words are
//! split the way tool names are written (snake_case, kebab-case,
//! camelCase), stop words are left out and the rest stemmed ([`text`]), and
//! a query word also matches its few synonyms ("download" finds "fetch",
//! "web page" finds "url") at a lower weight. A tool whose title or
//! description says it is deprecated scores half. When no tool shares a
//! word with the query, near words count (a shared prefix, a typo), and
//! when none do either, the tools are returned in list order: a search
//! never answers nothing while there are tools.
//!
//! Written here rather than taken from a crate: the ranking is the one
//! formula below, and the parts that matter for tools are the tokenizer and
//! the synonyms, which the general-purpose BM25 crates do not have.
//! `tool_search/eval.rs` measures it on the tool lists of nine public MCP
//! servers (`core/tests/fixtures/public_tools.json`).

use std::collections::HashMap;

use serde_json::Value;

use crate::tool_names::HubTool;

mod text;

#[cfg(test)]
mod eval;
#[cfg(test)]
mod tests;

/// Term-frequency saturation.
const K1: f64 = 1.2;
/// Length normalization of the prose (descriptions); names are not
/// normalized.
const B: f64 = 0.75;
/// Results a front end returns when the host gives no limit.
pub const DEFAULT_LIMIT: usize = 10;
/// Longest query considered, in characters (the rest is ignored).
pub const MAX_QUERY_CHARS: usize = 1000;
/// Most distinct query words considered (the rest are ignored).
const MAX_QUERY_TERMS: usize = 32;
/// Most parameters read from one tool's schema.
const MAX_PARAMETERS: usize = 256;

/// Weight of a word of the tool's own name or title.
const NAME_WEIGHT: f64 = 3.0;
/// Weight of a word of a parameter's name.
const PARAMETER_WEIGHT: f64 = 2.0;
/// Weight of a word of the server's name.
const SERVER_WEIGHT: f64 = 1.5;
/// Weight of each time a word appears in the description.
const DESCRIPTION_WEIGHT: f64 = 1.0;
/// Weight of each time a word appears in a parameter's description.
const PARAMETER_DESCRIPTION_WEIGHT: f64 = 0.5;
/// What a synonym of a query word is worth beside the word itself.
const SYNONYM_WEIGHT: f64 = 0.6;
/// What a near word (shared prefix, typo) is worth at most, when no tool
/// has any word of the query.
const NEAR_WEIGHT: f64 = 0.5;
/// Least similarity (Jaro-Winkler) of a near word.
const NEAR_SIMILARITY: f64 = 0.88;
/// Factor on the score of a tool marked deprecated.
const DEPRECATED_FACTOR: f64 = 0.5;

/// The tools that match `query`, best first, at most `limit`. Ties keep
/// list order. Tools with no word of the query (nor a synonym) are left
/// out, unless no tool has one: then the tools with near words, and if
/// none, the first tools, so that the answer is empty only when `limit` is
/// 0 or there are no tools.
pub fn rank<'a>(tools: &'a [HubTool], query: &str, limit: usize) -> Vec<&'a HubTool> {
    if limit == 0 || tools.is_empty() {
        return Vec::new();
    }
    rank_in(&Index::new(tools), tools, query, limit)
}

/// [`rank`] with the index of `tools` built beforehand ([`Index::new`]):
/// the hub keeps one per tool list, so a search over thousands of tools
/// does not tokenize them all again.
pub(crate) fn rank_in<'a>(
    index: &Index,
    tools: &'a [HubTool],
    query: &str,
    limit: usize,
) -> Vec<&'a HubTool> {
    if limit == 0 || tools.is_empty() {
        return Vec::new();
    }
    let query: String = query.chars().take(MAX_QUERY_CHARS).collect();
    let mut terms: Vec<String> = Vec::new();
    for term in text::terms(&query) {
        if !terms.contains(&term) && terms.len() < MAX_QUERY_TERMS {
            terms.push(term);
        }
    }
    let about_deprecation = terms.iter().any(|t| t.starts_with("deprecat"));
    let exact: Vec<Vec<(String, f64)>> = terms
        .iter()
        .map(|term| {
            let mut with = vec![(term.clone(), 1.0)];
            with.extend(
                text::synonyms(term)
                    .into_iter()
                    .map(|s| (s, SYNONYM_WEIGHT)),
            );
            with
        })
        .collect();
    let mut scored = index.score(&exact, about_deprecation);
    if scored.is_empty() {
        let near: Vec<Vec<(String, f64)>> = terms.iter().map(|t| index.near(t)).collect();
        scored = index.score(&near, about_deprecation);
    }
    if scored.is_empty() {
        // Nothing alike: the tools in list order, deprecated ones last.
        scored = index
            .docs
            .iter()
            .enumerate()
            .map(|(i, doc)| (if doc.deprecated { 0.5 } else { 1.0 }, i))
            .collect();
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, i)| &tools[i])
        .collect()
}

/// One tool as the ranking sees it.
struct Doc {
    /// Each word's weight in the name, title, server and parameter names.
    names: HashMap<String, f64>,
    /// Each word's weighted count in the description, then in the
    /// parameters' descriptions: two fields, each normalized by its length.
    prose: [HashMap<String, f64>; 2],
    /// The sum of each of `prose`.
    lengths: [f64; 2],
    /// Its title or description says "deprecated".
    deprecated: bool,
}

impl Doc {
    fn of(tool: &HubTool) -> Doc {
        let mut names: HashMap<String, f64> = HashMap::new();
        // Name, title, server and parameter names count once per word
        // (titles mostly repeat the name).
        let once = |mut words: Vec<String>, weight: f64, names: &mut HashMap<String, f64>| {
            words.sort_unstable();
            words.dedup();
            for word in words {
                *names.entry(word).or_default() += weight;
            }
        };
        let mut name = text::terms(&tool.tool);
        if let Some(title) = &tool.title {
            name.extend(text::terms(title));
        }
        once(name, NAME_WEIGHT, &mut names);
        once(text::terms(&tool.server), SERVER_WEIGHT, &mut names);
        let mut parameter_names = Vec::new();
        let mut parameter_descriptions = Vec::new();
        if let Some(Value::Object(properties)) = tool.input_schema.get("properties") {
            for (name, schema) in properties.iter().take(MAX_PARAMETERS) {
                parameter_names.extend(text::terms(name));
                if let Some(d) = schema.get("description").and_then(Value::as_str) {
                    parameter_descriptions.extend(text::terms(d));
                }
            }
        }
        once(parameter_names, PARAMETER_WEIGHT, &mut names);
        let description = tool.description.as_deref().unwrap_or("");
        // Prose counts each word sublinearly (1, then 1 + ln n): a
        // description that says "file" five times is not five times as
        // much about files.
        let prose = [
            (text::terms(description), DESCRIPTION_WEIGHT),
            (parameter_descriptions, PARAMETER_DESCRIPTION_WEIGHT),
        ]
        .map(|(words, weight)| {
            let mut counts: HashMap<String, usize> = HashMap::new();
            for word in words {
                *counts.entry(word).or_default() += 1;
            }
            counts
                .into_iter()
                .map(|(word, count)| (word, weight * (1.0 + (count as f64).ln())))
                .collect::<HashMap<String, f64>>()
        });
        let deprecated = [tool.title.as_deref().unwrap_or(""), description]
            .iter()
            .any(|t| t.to_lowercase().contains("deprecated"));
        Doc {
            lengths: [0, 1].map(|f| prose[f].values().sum()),
            names,
            prose,
            deprecated,
        }
    }
}

/// A tool list as the ranking sees it, with what BM25 needs of the whole
/// list; built once per list ([`rank_in`]).
pub(crate) struct Index {
    docs: Vec<Doc>,
    /// How many tools have each word.
    containing: HashMap<String, usize>,
    /// Mean `Doc::lengths` (each at least 1).
    averages: [f64; 2],
}

impl Index {
    pub(crate) fn new(tools: &[HubTool]) -> Index {
        let docs: Vec<Doc> = tools.iter().map(Doc::of).collect();
        let mut containing: HashMap<String, usize> = HashMap::new();
        for doc in &docs {
            let mut words: Vec<&String> = doc
                .names
                .keys()
                .chain(doc.prose.iter().flat_map(HashMap::keys))
                .collect();
            words.sort_unstable();
            words.dedup();
            for word in words {
                *containing.entry(word.clone()).or_default() += 1;
            }
        }
        let averages = [0, 1].map(|f| {
            let total: f64 = docs.iter().map(|d| d.lengths[f]).sum();
            (total / docs.len().max(1) as f64).max(1.0)
        });
        Index {
            docs,
            containing,
            averages,
        }
    }

    /// `(score, index)` of each tool that has a word of `query` (one list
    /// of weighted alternatives per query word).
    fn score(&self, query: &[Vec<(String, f64)>], about_deprecation: bool) -> Vec<(f64, usize)> {
        let n = self.docs.len() as f64;
        self.docs
            .iter()
            .enumerate()
            .map(|(i, doc)| {
                let norms = [0, 1].map(|f| 1.0 - B + B * doc.lengths[f] / self.averages[f]);
                let mut score: f64 = query
                    .iter()
                    .flatten()
                    .map(|(word, weight)| {
                        let tf = doc.names.get(word).copied().unwrap_or(0.0)
                            + (0..2)
                                .map(|f| doc.prose[f].get(word).copied().unwrap_or(0.0) / norms[f])
                                .sum::<f64>();
                        if tf == 0.0 {
                            return 0.0;
                        }
                        let df = self.containing.get(word).copied().unwrap_or(0) as f64;
                        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                        weight * idf * tf * (K1 + 1.0) / (tf + K1)
                    })
                    .sum();
                if doc.deprecated && !about_deprecation {
                    score *= DEPRECATED_FACTOR;
                }
                (score, i)
            })
            .filter(|(score, _)| *score > 0.0)
            .collect()
    }

    /// The words of the tools near `term`: one starts with the other (at
    /// least three letters shared), or they are alike (a typo), weighted by
    /// how alike.
    fn near(&self, term: &str) -> Vec<(String, f64)> {
        if term.chars().count() < 3 {
            return Vec::new();
        }
        let mut near: Vec<(String, f64)> = self
            .containing
            .keys()
            .filter_map(|word| {
                let prefix = word.len() >= 3 && (word.starts_with(term) || term.starts_with(word));
                let similarity = if prefix {
                    1.0
                } else {
                    strsim::jaro_winkler(term, word)
                };
                (similarity >= NEAR_SIMILARITY).then(|| (word.clone(), NEAR_WEIGHT * similarity))
            })
            .collect();
        // The same sum in the same order, whatever the map's order.
        near.sort_by(|a, b| a.0.cmp(&b.0));
        near
    }
}
