//! The SSE parser against the examples of the WHATWG HTML "server-sent
//! events" section, and (proptest) against a direct transcription of its
//! interpretation rules, with the input split into chunks anywhere.

use super::*;
use proptest::prelude::*;

const BIG: usize = usize::MAX / 4;

fn ev(event: &str, data: &str, id: &str) -> Item {
    Item::Event(Event {
        event: event.to_owned(),
        data: data.to_owned(),
        id: id.to_owned(),
    })
}

/// Every split of `input` into one, two and three chunks gives `expected`.
fn all_splits(input: &[u8], max: usize, expected: &[Item]) {
    assert_eq!(parse_chunks([input], max), expected, "whole");
    for i in 0..=input.len() {
        assert_eq!(
            parse_chunks([&input[..i], &input[i..]], max),
            expected,
            "split at {i}"
        );
        for j in i..=input.len() {
            assert_eq!(
                parse_chunks([&input[..i], &input[i..j], &input[j..]], max),
                expected,
                "split at {i}, {j}"
            );
        }
    }
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(parse_chunks(bytes, max), expected, "byte by byte");
}

#[test]
fn spec_example_stock_ticker_joins_data_lines() {
    let input = "data: YHOO\ndata: +2\ndata: 10\n\n";
    all_splits(input.as_bytes(), BIG, &[ev("message", "YHOO\n+2\n10", "")]);
}

#[test]
fn spec_example_four_blocks_with_ids() {
    let input = ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n";
    all_splits(
        input.as_bytes(),
        BIG,
        &[
            ev("message", "first event", "1"),
            ev("message", "second event", ""),
            ev("message", " third event", ""),
        ],
    );
    // The end of the stream does not dispatch the last event.
    let cut = ": test stream\n\ndata: first event\nid: 1\n\ndata: last\n";
    let mut parser = SseParser::new(BIG);
    parser.push(cut.as_bytes());
    assert_eq!(parser.next_item(), Some(ev("message", "first event", "1")));
    assert_eq!(parser.next_item(), None);
    assert_eq!(parser.last_event_id(), "1");
}

#[test]
fn spec_example_empty_data_and_a_lone_newline() {
    let input = "data\n\ndata\ndata\n\ndata:";
    all_splits(
        input.as_bytes(),
        BIG,
        &[ev("message", "", ""), ev("message", "\n", "")],
    );
}

#[test]
fn spec_example_one_space_after_the_colon_is_dropped() {
    let input = "data:test\n\ndata: test\n\n";
    all_splits(
        input.as_bytes(),
        BIG,
        &[ev("message", "test", ""), ev("message", "test", "")],
    );
}

#[test]
fn cr_lf_and_crlf_all_end_lines_even_split_between_cr_and_lf() {
    let input = b"event: a\rdata: 1\r\n\r\nevent: b\ndata: 2\r\rdata: 3\r\n\n";
    all_splits(
        input,
        BIG,
        &[ev("a", "1", ""), ev("b", "2", ""), ev("message", "3", "")],
    );
}

#[test]
fn a_leading_bom_is_ignored_once() {
    let input = "\u{FEFF}data: x\n\n\u{FEFF}data: y\n\n";
    // The second BOM is part of a field name ("\u{FEFF}data"): ignored field.
    all_splits(input.as_bytes(), BIG, &[ev("message", "x", "")]);
}

#[test]
fn comments_unknown_fields_and_event_types() {
    let input = ":ping\n: another\nfoo: bar\nevent: endpoint\ndata: /messages?s=1\n\n:\n\n";
    all_splits(
        input.as_bytes(),
        BIG,
        &[ev("endpoint", "/messages?s=1", "")],
    );
}

#[test]
fn ids_with_nul_are_ignored_and_ids_persist() {
    let input = b"id: 7\ndata: a\n\nid: 8\0x\ndata: b\n\ndata: c\n\nid\n\n";
    all_splits(
        input,
        BIG,
        &[
            ev("message", "a", "7"),
            ev("message", "b", "7"),
            ev("message", "c", "7"),
        ],
    );
    let mut parser = SseParser::new(BIG);
    parser.push(input);
    // The last block ("id" alone) reset the id without an event.
    assert_eq!(parser.last_event_id(), "");
}

#[test]
fn an_id_only_block_sets_the_last_event_id_without_an_event() {
    let mut parser = SseParser::new(BIG);
    parser.push(b"id: 42\n\n");
    assert_eq!(parser.next_item(), None);
    assert_eq!(parser.last_event_id(), "42");
    // Not before the blank line.
    let mut parser = SseParser::new(BIG);
    parser.push(b"id: 42\n");
    assert_eq!(parser.last_event_id(), "");
}

#[test]
fn retry_takes_digits_only() {
    for (line, want) in [
        ("retry: 1500\n", Some(1500)),
        ("retry: 15a0\n", None),
        ("retry: -1\n", None),
        ("retry:\n", None),
        ("retry: 1.5\n", None),
        ("retry:  100\n", None), // the second space is part of the value
        ("retry: 99999999999999999999999\n", None),
    ] {
        let mut parser = SseParser::new(BIG);
        parser.push(line.as_bytes());
        assert_eq!(parser.retry(), want.map(Duration::from_millis), "{line:?}");
    }
    // A later invalid value keeps the earlier one.
    let mut parser = SseParser::new(BIG);
    parser.push(b"retry: 10\nretry: x\n");
    assert_eq!(parser.retry(), Some(Duration::from_millis(10)));
}

#[test]
fn invalid_utf8_is_replaced() {
    let input = b"data: a\xFFb\xE2\x82\n\n";
    all_splits(input, BIG, &[ev("message", "a\u{FFFD}b\u{FFFD}", "")]);
}

#[test]
fn an_event_at_the_cap_passes_one_past_it_does_not() {
    let at = format!("data: {}\n\n", "x".repeat(10));
    all_splits(at.as_bytes(), 10, &[ev("message", &"x".repeat(10), "")]);
    let joined = "data: xxxx\ndata: xxxxx\n\n"; // 4 + 1 + 5 = 10 bytes
    all_splits(joined.as_bytes(), 10, &[ev("message", "xxxx\nxxxxx", "")]);
    let over = "data: xxxx\ndata: xxxxxx\n\ndata: ok\n\n";
    let items = parse_chunks([over.as_bytes()], 10);
    assert!(
        matches!(items[0], Item::Oversized { size: 11, .. }),
        "{items:?}"
    );
    assert_eq!(items[1..], [ev("message", "ok", "")]);
}

#[test]
fn an_endless_event_is_reported_before_its_end_and_skipped() {
    let mut parser = SseParser::new(1000);
    parser.push(
        br#"id: 3
data: {"jsonrpc":"2.0","id":9,"result":{"text":""#,
    );
    assert_eq!(parser.next_item(), None);
    let chunk = vec![b'x'; 600];
    parser.push(&chunk);
    parser.push(&chunk);
    match parser.next_item() {
        Some(Item::Oversized { size, head }) => {
            assert!(size > 1000, "{size}");
            assert!(head.starts_with(br#"{"jsonrpc":"2.0","id":9,"#), "{head:?}");
        }
        other => panic!("expected Oversized, got {other:?}"),
    }
    // The rest is discarded, unbuffered, until the blank line.
    for _ in 0..1000 {
        parser.push(&chunk);
        parser.push(b"\ndata: more\r");
    }
    assert_eq!(parser.line.capacity(), 0);
    assert!(parser.data.capacity() < 100);
    assert_eq!(parser.next_item(), None);
    parser.push(b"\n\r\ndata: after\n\n");
    assert_eq!(parser.next_item(), Some(ev("message", "after", "3")));
}

#[test]
fn endless_comment_or_field_lines_are_oversized_too() {
    for start in [&b": "[..], b"event: ", b"id: ", b"xyz"] {
        let mut parser = SseParser::new(100);
        parser.push(start);
        for _ in 0..10 {
            parser.push(&[b'a'; 50]);
        }
        assert!(
            matches!(parser.next_item(), Some(Item::Oversized { .. })),
            "{start:?}"
        );
        assert_eq!(parser.line.capacity(), 0);
    }
}

#[test]
fn a_long_line_is_oversized_whether_it_comes_whole_or_in_pieces() {
    for line in [": comment", "event: name", "id: 1", "data: x"] {
        let input = format!("{line}{}\n\ndata: after\n\n", "a".repeat(200));
        let kinds = |items: Vec<Item>| -> Vec<String> {
            items
                .into_iter()
                .map(|i| match i {
                    Item::Event(e) => e.data,
                    Item::Oversized { .. } => "<oversized>".to_owned(),
                })
                .collect()
        };
        let whole = kinds(parse_chunks([input.as_bytes()], 100));
        assert_eq!(whole, ["<oversized>", "after"], "{line}");
        for at in [3, 50, 150, 210] {
            let (a, b) = input.as_bytes().split_at(at);
            assert_eq!(kinds(parse_chunks([a, b], 100)), whole, "{line} at {at}");
        }
    }
}

#[test]
fn the_start_of_a_data_line_is_not_taken_for_a_long_line() {
    // Found by fuzzing: with a cap of 0, "dat" was oversized before "a:" came.
    all_splits(b"data:\n\n", 0, &[ev("message", "", "")]);
}

#[test]
fn a_large_event_in_many_chunks_is_parsed_in_linear_time() {
    // 8 MB in 4 KB chunks: a quadratic parser would take minutes here.
    let payload = "y".repeat(8 << 20);
    let input = format!("event: message\ndata: {payload}\n\n");
    let items = parse_chunks(input.as_bytes().chunks(4096), 16 << 20);
    assert_eq!(items.len(), 1);
    match &items[0] {
        Item::Event(e) => assert_eq!(e.data.len(), payload.len()),
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------- proptest

/// The interpretation rules of the specification, transcribed directly:
/// decode, strip one BOM, split into lines, and only then parse. Returns
/// the events (type, data, id) and the final last event id.
fn reference(input: &[u8]) -> (Vec<(String, String, String)>, String, Option<u64>) {
    let text = String::from_utf8_lossy(input);
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
    let mut lines = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                lines.push(std::mem::take(&mut current));
            }
            '\n' => lines.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    // `current` (an unterminated last line) is discarded.
    let (mut events, mut data, mut kind) = (Vec::new(), String::new(), String::new());
    let (mut id_buffer, mut last_id, mut retry) = (String::new(), String::new(), None);
    for line in lines {
        if line.is_empty() {
            last_id = id_buffer.clone();
            if data.is_empty() {
                kind.clear();
                continue;
            }
            data.pop();
            let t = if kind.is_empty() {
                "message".to_owned()
            } else {
                kind.clone()
            };
            events.push((t, std::mem::take(&mut data), last_id.clone()));
            kind.clear();
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&line[..], ""),
        };
        match field {
            "event" => kind = value.to_owned(),
            "data" => {
                data.push_str(value);
                data.push('\n');
            }
            "id" if !value.contains('\0') => id_buffer = value.to_owned(),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                if let Ok(ms) = value.parse() {
                    retry = Some(ms);
                }
            }
            _ => {}
        }
    }
    (events, last_id, retry)
}

/// Streams made of the pieces the rules care about.
fn stream() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"data".to_vec()),
        Just(b"data:".to_vec()),
        Just(b"data: ".to_vec()),
        Just(b"event: ".to_vec()),
        Just(b"id: ".to_vec()),
        Just(b"id".to_vec()),
        Just(b"retry: ".to_vec()),
        Just(b"12".to_vec()),
        Just(b":".to_vec()),
        Just(b" ".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\n\n".to_vec()),
        Just(b"\0".to_vec()),
        Just("\u{FEFF}".as_bytes().to_vec()),
        Just("é".as_bytes().to_vec()),
        Just(b"\xE2\x82".to_vec()),
        "[a-z{}\"]{0,6}".prop_map(String::into_bytes),
        prop::collection::vec(any::<u8>(), 0..4),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|p| p.concat())
}

/// `input` cut at the given (sorted, clamped) positions.
fn cut(input: &[u8], mut at: Vec<usize>) -> Vec<&[u8]> {
    at.iter_mut().for_each(|a| *a %= input.len() + 1);
    at.sort_unstable();
    let mut chunks = Vec::new();
    let mut from = 0;
    for a in at {
        chunks.push(&input[from..a]);
        from = a;
    }
    chunks.push(&input[from..]);
    chunks
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn matches_the_specification_in_any_chunking(
        input in stream(),
        at in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let (want, want_id, want_retry) = reference(&input);
        let mut parser = SseParser::new(BIG);
        let mut got = Vec::new();
        for chunk in cut(&input, at) {
            parser.push(chunk);
            while let Some(item) = parser.next_item() {
                match item {
                    Item::Event(e) => got.push((e.event, e.data, e.id)),
                    Item::Oversized { .. } => panic!("no cap"),
                }
            }
        }
        prop_assert_eq!(got, want);
        prop_assert_eq!(parser.last_event_id(), want_id.as_str());
        prop_assert_eq!(parser.retry(), want_retry.map(Duration::from_millis));
    }

    #[test]
    fn the_cap_refuses_exactly_the_events_over_it(
        events in prop::collection::vec(
            (prop::collection::vec("[a-z]{0,30}", 1..4), any::<bool>()),
            0..8,
        ),
        cap in 16usize..64,
        at in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        // Short event types and ids, data lines of any length.
        let mut input = String::new();
        let mut want = Vec::new();
        for (lines, typed) in &events {
            if *typed {
                input.push_str("event: t\n");
            }
            for line in lines {
                input.push_str(&format!("data: {line}\r\n"));
            }
            input.push_str("id: 1\n\n");
            let data = lines.join("\n");
            want.push(if data.len() > cap { None } else { Some(data) });
        }
        let got: Vec<Option<String>> = {
            let mut parser = SseParser::new(cap);
            let mut got = Vec::new();
            for chunk in cut(input.as_bytes(), at) {
                parser.push(chunk);
                while let Some(item) = parser.next_item() {
                    got.push(match item {
                        Item::Event(e) => Some(e.data),
                        Item::Oversized { size, .. } => {
                            prop_assert!(size > cap);
                            None
                        }
                    });
                }
            }
            got
        };
        prop_assert_eq!(got, want);
    }
}
