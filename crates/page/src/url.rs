//! The view in the URL hash: what a bookmark needs to come back to a view, versioned.
//!
//! The hash holds the files by name, the device shown, the axis, the visible range, the
//! y scale, the selected allocation, the search, the theme, the top-level view, the
//! moment and the linked view open. A
//! bookmark opened later restores the view once the same files are opened again (the
//! page says which it expects).
//!
//! Format, version 1 (`v=1`): `#v=1&files=a.pickle,b.pickle&rank=a.pickle&device=0&
//! axis=time&x=0,1234.5&y=0,5e9&yscale=allocated&sel=680&q=text&theme=dark&tab=fleet&m=145&
//! lens=flame`,
//! encoded as `application/x-www-form-urlencoded` (what the browser's
//! `URLSearchParams` reads and writes). Every key is optional; `yscale`, `m` and `lens` were
//! added to version 1 without a new version because a reader that lacks them keeps its
//! defaults (reserved, the peak, the first linked view). Hashes without `v` are the earlier forms (`#example`, `#url=…`), read as
//! commands; [`upgrade`] is where a later version's reader translates older ones, and
//! a version newer than [`VERSION`] is reported, never half-read.

use memscope_snapshot::Axis;

/// The current version of the hash format.
pub const VERSION: u32 = 1;

/// What the y axis is fitted to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum YScale {
    /// The reserved bytes' peak (allocated fits under it).
    #[default]
    Reserved,
    /// The allocated bytes' peak (reserved may run off the top).
    Allocated,
}

impl YScale {
    /// Its name in the URL, the toolbar and `data-y-scale`.
    pub fn name(self) -> &'static str {
        match self {
            YScale::Reserved => "reserved",
            YScale::Allocated => "allocated",
        }
    }

    /// The other choice.
    pub fn toggled(self) -> YScale {
        match self {
            YScale::Reserved => YScale::Allocated,
            YScale::Allocated => YScale::Reserved,
        }
    }

    fn from_name(name: &str) -> Option<YScale> {
        match name {
            "reserved" => Some(YScale::Reserved),
            "allocated" => Some(YScale::Allocated),
            _ => None,
        }
    }
}

/// A view as a bookmark holds it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ViewState {
    /// The files the view shows, by name.
    pub files: Vec<String>,
    /// The file and device on the timeline.
    pub active: Option<(String, i32)>,
    /// The x axis.
    pub axis: Option<Axis>,
    /// The visible x range.
    pub x: Option<(f64, f64)>,
    /// The visible y range (bytes).
    pub y: Option<(f64, f64)>,
    /// What the y axis is fitted to.
    pub y_scale: Option<YScale>,
    /// The selected allocation of the active device.
    pub selected: Option<u32>,
    /// The search text.
    pub search: Option<String>,
    /// The theme choice.
    pub theme: Option<String>,
    /// The top-level view (`rank` or `fleet`).
    pub tab: Option<String>,
    /// The moment (the allocator's state after entry `m − 1` of the active device);
    /// none while it is the default, the peak.
    pub moment: Option<u32>,
    /// The linked view open under the timeline (`segments`, `flame`, …); none for the
    /// first.
    pub lens: Option<String>,
}

/// One-shot instructions in a hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Open the bundled example.
    Example,
    /// Fetch a snapshot from an address (CORS-enabled).
    Url(String),
}

/// What a hash says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// The view to restore, if any.
    pub state: Option<ViewState>,
    /// Things to do now.
    pub commands: Vec<Command>,
    /// A version this page cannot read.
    pub unknown_version: Option<String>,
}

/// The key–value pairs of a hash, in order.
pub type Params = Vec<(String, String)>;

fn get<'a>(params: &'a Params, key: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn pair(text: &str) -> Option<(f64, f64)> {
    let (a, b) = text.split_once(',')?;
    let (a, b): (f64, f64) = (a.parse().ok()?, b.parse().ok()?);
    (a.is_finite() && b.is_finite() && a < b).then_some((a, b))
}

/// Translates the parameters of an older version into the current one. Version 1 is
/// the first with a state; earlier hashes only carried commands, which need nothing.
pub fn upgrade(version: u32, params: Params) -> Params {
    debug_assert!(version <= VERSION);
    params
}

/// Reads a hash (`#…`).
pub fn parse(hash: &str) -> Parsed {
    let text = hash.strip_prefix('#').unwrap_or(hash);
    let mut out = Parsed::default();
    if text.is_empty() {
        return out;
    }
    let params = decode(text);
    if params.iter().any(|(k, _)| k == "example") {
        out.commands.push(Command::Example);
    }
    if let Some(url) = get(&params, "url") {
        out.commands.push(Command::Url(url.to_owned()));
    }
    let Some(v) = get(&params, "v") else {
        return out;
    };
    let version = match v.parse::<u32>() {
        Ok(version) if version <= VERSION => version,
        _ => {
            out.unknown_version = Some(v.to_owned());
            return out;
        }
    };
    let params = upgrade(version, params);
    let get = |k: &str| get(&params, k).filter(|s| !s.is_empty());
    out.state = Some(ViewState {
        files: get("files")
            .map(|f| f.split(',').map(str::to_owned).collect())
            .unwrap_or_default(),
        active: get("rank").map(|file| {
            let device = get("device").and_then(|d| d.parse().ok()).unwrap_or(0);
            (file.to_owned(), device)
        }),
        axis: get("axis").and_then(|a| match a {
            "time" => Some(Axis::Time),
            "events" => Some(Axis::Events),
            _ => None,
        }),
        x: get("x").and_then(pair),
        y: get("y").and_then(pair),
        y_scale: get("yscale").and_then(YScale::from_name),
        selected: get("sel").and_then(|s| s.parse().ok()),
        search: get("q").map(str::to_owned),
        theme: get("theme").map(str::to_owned),
        tab: get("tab").map(str::to_owned),
        moment: get("m").and_then(|m| m.parse().ok()),
        lens: get("lens").map(str::to_owned),
    });
    out
}

/// Writes a view as a hash.
pub fn format(state: &ViewState) -> String {
    let mut params: Params = vec![("v".to_owned(), VERSION.to_string())];
    let mut add = |k: &str, v: String| params.push((k.to_owned(), v));
    if !state.files.is_empty() {
        add("files", state.files.join(","));
    }
    if let Some((file, device)) = &state.active {
        add("rank", file.clone());
        add("device", device.to_string());
    }
    if let Some(axis) = state.axis {
        add(
            "axis",
            if axis == Axis::Time { "time" } else { "events" }.to_owned(),
        );
    }
    if let Some((a, b)) = state.x {
        add("x", format!("{a},{b}"));
    }
    if let Some((a, b)) = state.y {
        add("y", format!("{a},{b}"));
    }
    if let Some(scale) = state.y_scale {
        add("yscale", scale.name().to_owned());
    }
    if let Some(sel) = state.selected {
        add("sel", sel.to_string());
    }
    if let Some(q) = &state.search {
        add("q", q.clone());
    }
    if let Some(theme) = &state.theme {
        add("theme", theme.clone());
    }
    if let Some(tab) = &state.tab {
        add("tab", tab.clone());
    }
    if let Some(m) = state.moment {
        add("m", m.to_string());
    }
    if let Some(lens) = &state.lens {
        add("lens", lens.clone());
    }
    format!("#{}", encode(&params))
}

/// Which of the `loaded` files a bookmark's `wanted` file is. Files are named by their
/// path relative to what was opened (`tp2_pp1/rank0.pickle`), so two runs' files of
/// the same name stay apart; a link written when files were named by base name only
/// (`rank0.pickle`) still finds its file when exactly one loaded file has that name.
pub fn find_file(wanted: &str, loaded: &[&str]) -> Option<usize> {
    if let Some(i) = loaded.iter().position(|l| *l == wanted) {
        return Some(i);
    }
    if wanted.contains(['/', '\\']) {
        return None;
    }
    let mut same_name = loaded
        .iter()
        .enumerate()
        .filter(|(_, l)| memscope_snapshot::base_name(l) == wanted);
    match (same_name.next(), same_name.next()) {
        (Some((i, _)), None) => Some(i),
        _ => None,
    }
}

/// `application/x-www-form-urlencoded` serialization, byte for byte as
/// `URLSearchParams.toString()` writes it.
pub fn encode(params: &Params) -> String {
    let mut out = String::new();
    for (i, (k, v)) in params.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        encode_into(&mut out, k);
        out.push('=');
        encode_into(&mut out, v);
    }
    out
}

fn encode_into(out: &mut String, text: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in text.as_bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => {
                out.push('%');
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 15)]));
            }
        }
    }
}

/// `application/x-www-form-urlencoded` parsing as `URLSearchParams` does it: `+` is a
/// space, a `%` not followed by two hex digits stays as it is, bytes that are not UTF-8
/// become U+FFFD.
pub fn decode(text: &str) -> Params {
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode_one(k), decode_one(v))
        })
        .collect()
}

fn decode_one(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let hex = |b: u8| char::from(b).to_digit(16);
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => match (
                bytes.get(i + 1).and_then(|&b| hex(b)),
                bytes.get(i + 2).and_then(|&b| hex(b)),
            ) {
                (Some(high), Some(low)) => {
                    // Two hex digits make one byte.
                    out.push((high * 16 + low) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use proptest::prelude::*;

    fn full() -> ViewState {
        ViewState {
            files: vec!["tp2_pp1/rank0.pickle".into(), "tp2_pp2/rank0.pickle".into()],
            active: Some(("tp2_pp2/rank0.pickle".into(), 1)),
            axis: Some(Axis::Events),
            x: Some((0.5, 1234.25)),
            y: Some((0.0, 5e9)),
            y_scale: Some(YScale::Allocated),
            selected: Some(680),
            search: Some("aten::mm & 12 MiB +x%".into()),
            theme: Some("dark".into()),
            tab: Some("fleet".into()),
            moment: Some(145),
            lens: Some("flame".into()),
        }
    }

    #[test]
    fn a_full_view_round_trips() {
        let state = full();
        let hash = format(&state);
        assert!(hash.starts_with("#v=1&files=tp2_pp1%2Frank0.pickle%2Ctp2_pp2"));
        assert!(hash.contains("&yscale=allocated&"), "{hash}");
        assert!(hash.ends_with("&m=145&lens=flame"), "{hash}");
        assert!(
            hash.contains("&q=aten%3A%3Amm+%26+12+MiB+%2Bx%25&"),
            "{hash}"
        );
        let parsed = parse(&hash);
        assert_eq!(parsed.state, Some(state));
        assert!(parsed.commands.is_empty());
        assert_eq!(parsed.unknown_version, None);
    }

    #[test]
    fn an_empty_view_writes_only_the_version() {
        assert_eq!(format(&ViewState::default()), "#v=1");
        assert_eq!(parse("#v=1").state, Some(ViewState::default()));
    }

    #[test]
    fn hashes_before_version_1_are_commands() {
        let parsed = parse("#example");
        assert_eq!(parsed.commands, vec![Command::Example]);
        assert_eq!(parsed.state, None);
        let parsed = parse("#url=https%3A%2F%2Fexample.org%2Fa.pickle%3Fx%3D1");
        assert_eq!(
            parsed.commands,
            vec![Command::Url("https://example.org/a.pickle?x=1".into())]
        );
        assert_eq!(parse("").state, None);
        assert_eq!(parse("#").state, None);
    }

    #[test]
    fn a_newer_version_is_reported_not_read() {
        let parsed = parse("#v=2&rank=a.pickle&sel=3");
        assert_eq!(parsed.unknown_version.as_deref(), Some("2"));
        assert_eq!(parsed.state, None);
        assert_eq!(parse("#v=x").unknown_version.as_deref(), Some("x"));
    }

    #[test]
    fn a_version_1_link_without_the_y_scale_keeps_the_default() {
        // Links written before `yscale` existed.
        let parsed = parse("#v=1&files=a.pickle&rank=a.pickle&device=0&axis=time&x=0,10");
        let state = parsed.state.unwrap();
        assert_eq!(state.y_scale, None);
        assert_eq!(state.y_scale.unwrap_or_default(), YScale::Reserved);
        assert_eq!(state.x, Some((0.0, 10.0)));
        assert_eq!(state.active, Some(("a.pickle".into(), 0)));
    }

    #[test]
    fn bad_values_are_left_out() {
        let state = parse("#v=1&x=5,1&y=a,b&axis=sideways&yscale=huge&sel=-1&device=x&rank=a")
            .state
            .unwrap();
        assert_eq!(state.x, None, "an empty or reversed range is no range");
        assert_eq!(state.y, None);
        assert_eq!(state.axis, None);
        assert_eq!(state.y_scale, None);
        assert_eq!(state.selected, None);
        assert_eq!(state.active, Some(("a".into(), 0)));
        assert_eq!(parse("#v=1&x=0,inf").state.unwrap().x, None);
    }

    #[test]
    fn files_are_found_by_relative_path_and_old_links_by_a_unique_name() {
        let loaded = [
            "tp2_pp1/rank0.pickle",
            "tp2_pp2/rank0.pickle",
            "b/rank1.pickle",
        ];
        assert_eq!(find_file("tp2_pp2/rank0.pickle", &loaded), Some(1));
        assert_eq!(find_file("tp2_pp1/rank0.pickle", &loaded), Some(0));
        // A base name shared by two runs' files is ambiguous: neither is restored.
        assert_eq!(find_file("rank0.pickle", &loaded), None);
        assert_eq!(find_file("rank1.pickle", &loaded), Some(2));
        assert_eq!(find_file("c/rank1.pickle", &loaded), None);
        assert_eq!(find_file("rank2.pickle", &loaded), None);
        // Files opened one by one are named as they are.
        assert_eq!(
            find_file("rank0.pickle", &["rank0.pickle", "x/rank0.pickle"]),
            Some(0)
        );
        // The paths survive the hash.
        let state = ViewState {
            files: loaded.iter().map(|s| (*s).to_owned()).collect(),
            active: Some(("tp2_pp2/rank0.pickle".into(), 0)),
            ..ViewState::default()
        };
        let back = parse(&format(&state)).state.unwrap();
        let names: Vec<&str> = back.files.iter().map(String::as_str).collect();
        assert_eq!(find_file(&back.active.unwrap().0, &names), Some(1));
    }

    #[test]
    fn decoding_follows_url_search_params() {
        // Cases checked against Chromium's URLSearchParams.
        assert_eq!(
            decode("a=%41%zz%4&b+c=d+e&&f&=g"),
            vec![
                ("a".to_owned(), "A%zz%4".to_owned()),
                ("b c".to_owned(), "d e".to_owned()),
                ("f".to_owned(), String::new()),
                (String::new(), "g".to_owned()),
            ]
        );
        assert_eq!(
            decode("q=%E2%82%AC%FF"),
            vec![("q".into(), "€\u{FFFD}".into())]
        );
        assert_eq!(
            encode(&vec![("q".into(), "a b~€*-._/".into())]),
            "q=a+b%7E%E2%82%AC*-._%2F"
        );
    }

    proptest! {
        #[test]
        fn any_text_survives_encoding(key in ".*", value in ".*") {
            let params: Params = vec![(key, value)];
            let text = encode(&params);
            let back = decode(&text);
            // An empty pair is skipped by the reader, as by URLSearchParams.
            prop_assert_eq!(back, params);
        }

        #[test]
        fn any_view_round_trips(
            sel in proptest::option::of(0u32..u32::MAX),
            q in proptest::option::of("[^\u{0}]{1,20}"),
            x0 in -1e12f64..1e12, dx in 1e-3f64..1e12,
            files in proptest::collection::vec("[a-z0-9_/.]{1,12}", 0..4),
        ) {
            let state = ViewState {
                files: files.clone(),
                active: files.first().map(|f| (f.clone(), 3)),
                x: Some((x0, x0 + dx)).filter(|(a, b)| a < b),
                selected: sel,
                search: q,
                ..ViewState::default()
            };
            prop_assert_eq!(parse(&format(&state)).state, Some(state));
        }
    }
}
