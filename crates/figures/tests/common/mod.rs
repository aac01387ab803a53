//! A minimal reader of the SVG the figures write, for the tests: elements with their
//! attributes and text, in document order, and a check that tags balance.

#![allow(dead_code)] // each test file uses part of it

use std::collections::BTreeMap;

/// One element: its name, attributes and (for `text`) its unescaped content.
#[derive(Debug, Clone)]
pub struct Element {
    pub name: String,
    pub attrs: BTreeMap<String, String>,
    pub text: String,
}

impl Element {
    pub fn num(&self, key: &str) -> f64 {
        self.attrs[key].parse().unwrap()
    }
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// Every element, in order; panics when tags do not balance.
pub fn elements(svg: &str) -> Vec<Element> {
    let mut out: Vec<Element> = Vec::new();
    let mut open: Vec<(String, usize)> = Vec::new();
    let mut rest = svg;
    while let Some(start) = rest.find('<') {
        let text = &rest[..start];
        if let Some(&(ref name, i)) = open.last() {
            if name == "text" {
                out[i].text.push_str(&unescape(text));
            }
        }
        let end = rest[start..].find('>').unwrap() + start;
        let tag = &rest[start + 1..end];
        rest = &rest[end + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let (open_name, _) = open.pop().expect("a closing tag without an opening one");
            assert_eq!(open_name, name.trim(), "tags must balance");
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let name_end = tag.find(char::is_whitespace).unwrap_or(tag.len());
        let name = tag[..name_end].to_owned();
        let mut attrs = BTreeMap::new();
        let mut a = &tag[name_end..];
        while let Some(eq) = a.find("=\"") {
            let key = a[..eq].trim().to_owned();
            let close = a[eq + 2..].find('"').unwrap() + eq + 2;
            attrs.insert(key, unescape(&a[eq + 2..close]));
            a = &a[close + 1..];
        }
        out.push(Element {
            name: name.clone(),
            attrs,
            text: String::new(),
        });
        if !self_closing {
            open.push((name, out.len() - 1));
        }
    }
    assert!(open.is_empty(), "unclosed tags: {open:?}");
    out
}

/// The text content of every `text` element.
pub fn texts(svg: &str) -> Vec<String> {
    elements(svg)
        .into_iter()
        .filter(|e| e.name == "text")
        .map(|e| e.text)
        .collect()
}
