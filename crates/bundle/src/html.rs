//! The single HTML file: the single-file page (`single.html`, written by the page's
//! build) with the ranks, the view and the anomalies put in at its data marker.
//!
//! What goes in, before `</body>`:
//! - `<script type="application/json" id="memscope-embedded">`: the manifest
//!   ([`Manifest`]: format version, the view as a bookmark hash, the ranks' names);
//! - one `<script type="application/octet-stream" class="memscope-rank">` per rank:
//!   its snapshot as gzip-compressed pickle, in base64; the page hands these bytes to
//!   its workers as if the file had been dropped, so they are read by the same reader
//!   with the same refusals;
//! - the anomalies, if any, as a static list (`#embedded-anomalies`) that needs no
//!   script, and likewise the original files' warnings (`#embedded-warnings`): the
//!   ranks are written back from what was read, so what the warnings are about is gone
//!   from them.
//!
//! Data blocks of a type the browser does not run are not scripts: the page's
//! Content-Security-Policy (script hashes only) holds for them as for anything else.

use serde::{Deserialize, Serialize};

use crate::{base64, BundleError};

/// Where the data goes in the single-file page.
pub const DATA_MARKER: &str = "<!--memscope:embedded-data-->";

/// The embedded data format's version.
pub const FORMAT_VERSION: u32 = 1;

/// One rank as embedded: its file name and its snapshot, gzip-compressed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankData {
    /// The name the page shows (the original file's base name).
    pub name: String,
    /// The snapshot pickle, gzip-compressed.
    pub gzip: Vec<u8>,
}

/// An anomaly as listed on open.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnomalyItem {
    /// Its kind (`oom`, `leak_suspect`, …).
    pub kind: String,
    /// The file it was found in.
    pub file: String,
    /// The device.
    pub device: i32,
    /// What it is, in words.
    pub summary: String,
}

/// What the original file said that the reader read differently (its warnings when it
/// was written), listed on open: the file written back no longer carries the oddity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileWarning {
    /// The file.
    pub file: String,
    /// The warning, as `memscope summary` prints it.
    pub message: String,
    /// How many times.
    pub count: u64,
}

/// The manifest of the embedded data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT_VERSION`] of the writer.
    pub version: u32,
    /// The view to open on, as a bookmark's URL hash (`#v=1&…`).
    pub hash: String,
    /// The ranks' names, in the order of their data blocks.
    pub ranks: Vec<String>,
    /// The anomalies listed on open.
    #[serde(default)]
    pub anomalies: Vec<AnomalyItem>,
    /// The original files' warnings, listed on open.
    #[serde(default)]
    pub warnings: Vec<FileWarning>,
}

/// Everything a single HTML file carries besides the page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Embedded {
    /// The view to open on, as a bookmark's URL hash.
    pub hash: String,
    /// The ranks.
    pub ranks: Vec<RankData>,
    /// The anomalies listed on open.
    pub anomalies: Vec<AnomalyItem>,
    /// The original files' warnings, listed on open.
    pub warnings: Vec<FileWarning>,
}

/// Text safe inside an HTML element or attribute.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The bytes `write_html` will add to a template: what the page shows before saving.
pub fn embedded_len(embedded: &Embedded) -> u64 {
    render(embedded).map_or(0, |s| s.len() as u64)
}

fn render(embedded: &Embedded) -> Result<String, BundleError> {
    let manifest = Manifest {
        version: FORMAT_VERSION,
        hash: embedded.hash.clone(),
        ranks: embedded.ranks.iter().map(|r| r.name.clone()).collect(),
        anomalies: embedded.anomalies.clone(),
        warnings: embedded.warnings.clone(),
    };
    // `<` escaped, so no `</script>` can end the block early.
    let json = serde_json::to_string(&manifest)
        .map_err(|e| BundleError::Manifest(e.to_string()))?
        .replace('<', "\\u003c");
    let mut out = String::new();
    out.push_str("<script type=\"application/json\" id=\"memscope-embedded\">");
    out.push_str(&json);
    out.push_str("</script>\n");
    for rank in &embedded.ranks {
        out.push_str(
            "<script type=\"application/octet-stream\" class=\"memscope-rank\" data-name=\"",
        );
        out.push_str(&escape(&rank.name));
        out.push_str("\">");
        out.push_str(&base64::encode(&rank.gzip));
        out.push_str("</script>\n");
    }
    if !embedded.anomalies.is_empty() {
        out.push_str(
            "<details id=\"embedded-anomalies\" class=\"embedded-anomalies\" open><summary>",
        );
        out.push_str(&format!(
            "Anomalies found when this file was written ({})",
            embedded.anomalies.len()
        ));
        out.push_str("</summary><ul>");
        for a in &embedded.anomalies {
            out.push_str(&format!(
                "<li data-kind=\"{}\"><b>{}</b> {} (device {}): {}</li>",
                escape(&a.kind),
                escape(&a.kind),
                escape(&a.file),
                a.device,
                escape(&a.summary)
            ));
        }
        out.push_str("</ul></details>\n");
    }
    if !embedded.warnings.is_empty() {
        out.push_str(
            "<details id=\"embedded-warnings\" class=\"embedded-anomalies embedded-warnings\" open><summary>",
        );
        out.push_str("Read differently from the original files (their warnings)</summary><ul>");
        for w in &embedded.warnings {
            out.push_str(&format!(
                "<li>{}: {} (×{})</li>",
                escape(&w.file),
                escape(&w.message),
                w.count
            ));
        }
        out.push_str("</ul></details>\n");
    }
    Ok(out)
}

/// The single HTML file: `template` (the built `single.html`) with `embedded` at its
/// data marker.
pub fn write_html(template: &str, embedded: &Embedded) -> Result<String, BundleError> {
    let Some(at) = template.find(DATA_MARKER) else {
        return Err(BundleError::NotATemplate);
    };
    let data = render(embedded)?;
    let mut out = String::with_capacity(template.len() + data.len());
    out.push_str(&template[..at]);
    out.push_str(&data);
    out.push_str(&template[at + DATA_MARKER.len()..]);
    Ok(out)
}

/// Where the single-file page's own parts start after the data (`scripts/postbuild.py`
/// puts the data marker right before it).
const PAGE_AFTER_DATA: &str = "<script type=\"text/plain\" id=\"memscope-worker-js\">";

/// The single-file page of a single HTML file (its document as written, e.g. as the
/// page serialized itself before starting): its data taken out, the marker back in.
pub fn template_of(html: &str) -> Result<String, BundleError> {
    let end = html
        .find(PAGE_AFTER_DATA)
        .ok_or(BundleError::NotATemplate)?;
    let start = html[..end]
        .find("<script type=\"application/json\" id=\"memscope-embedded\"")
        .or_else(|| html[..end].find(DATA_MARKER))
        .ok_or(BundleError::NotATemplate)?;
    Ok(format!("{}{DATA_MARKER}{}", &html[..start], &html[end..]))
}

/// The content of the element `<script …marker…>` starting at `from`: its attributes
/// and text, and where it ends.
fn script_at(html: &str, from: usize) -> Option<(&str, &str, usize)> {
    let open_end = from + html[from..].find('>')?;
    let close = open_end + html[open_end..].find("</script>")?;
    Some((
        &html[from..open_end],
        &html[open_end + 1..close],
        close + "</script>".len(),
    ))
}

/// Reads the data of a single HTML file back (the manifest, every rank's bytes and the
/// anomalies), refusing anything that does not match the manifest.
pub fn read_html(html: &str) -> Result<Embedded, BundleError> {
    let manifest_at = html
        .find("<script type=\"application/json\" id=\"memscope-embedded\"")
        .ok_or(BundleError::NoData)?;
    let (_, json, mut pos) = script_at(html, manifest_at).ok_or(BundleError::NoData)?;
    let manifest: Manifest =
        serde_json::from_str(json).map_err(|e| BundleError::Manifest(e.to_string()))?;
    if manifest.version > FORMAT_VERSION {
        return Err(BundleError::Manifest(format!(
            "written by a newer memscope (data format {})",
            manifest.version
        )));
    }
    let mut ranks = Vec::new();
    const RANK: &str = "<script type=\"application/octet-stream\" class=\"memscope-rank\"";
    while let Some(at) = html[pos..].find(RANK) {
        let (_, text, end) = script_at(html, pos + at).ok_or(BundleError::NoData)?;
        let i = ranks.len();
        let name = manifest
            .ranks
            .get(i)
            .ok_or_else(|| BundleError::Manifest(format!("rank {i} is not in the manifest")))?;
        let gzip = base64::decode(text).ok_or_else(|| BundleError::Rank {
            name: name.clone(),
            reason: "its data is not base64".to_owned(),
        })?;
        ranks.push(RankData {
            name: name.clone(),
            gzip,
        });
        pos = end;
    }
    if ranks.len() != manifest.ranks.len() {
        return Err(BundleError::Manifest(format!(
            "the manifest names {} ranks, the file holds {}",
            manifest.ranks.len(),
            ranks.len()
        )));
    }
    Ok(Embedded {
        hash: manifest.hash,
        ranks,
        anomalies: manifest.anomalies,
        warnings: manifest.warnings,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_reads_back() {
        let template = format!("<html><body><p>page</p>{DATA_MARKER}</body></html>");
        let embedded = Embedded {
            hash: "#v=1&files=a%3Cb.pickle".to_owned(),
            ranks: vec![
                RankData {
                    name: "a<b.pickle".to_owned(),
                    gzip: vec![0, 1, 2, 255],
                },
                RankData {
                    name: "rank1.pickle".to_owned(),
                    gzip: (0..=255).collect(),
                },
            ],
            anomalies: vec![AnomalyItem {
                kind: "oom".to_owned(),
                file: "a<b.pickle".to_owned(),
                device: 0,
                summary: "</script> 2 GiB".to_owned(),
            }],
            warnings: vec![FileWarning {
                file: "a<b.pickle".to_owned(),
                message: "unknown key 'x'".to_owned(),
                count: 3,
            }],
        };
        let html = write_html(&template, &embedded).unwrap();
        assert!(html.starts_with("<html><body><p>page</p>"));
        assert!(html.ends_with("</body></html>"));
        assert_eq!(html.matches("</script>").count(), 3);
        assert!(html.contains("unknown key &#39;x&#39; (×3)"));
        assert_eq!(read_html(&html).unwrap(), embedded);
        assert_eq!(
            html.len() as u64,
            template.len() as u64 - DATA_MARKER.len() as u64 + embedded_len(&embedded)
        );
    }

    #[test]
    fn a_written_file_gives_its_template_back() {
        let template = format!(
            "<html><body><p>page</p>{DATA_MARKER}{PAGE_AFTER_DATA}worker</script><script type=\"module\">boot</script></body></html>"
        );
        let embedded = Embedded {
            hash: "#v=1".to_owned(),
            ranks: vec![RankData {
                name: "r.pickle".to_owned(),
                gzip: vec![1, 2, 3],
            }],
            anomalies: vec![AnomalyItem {
                kind: "oom".to_owned(),
                file: "r.pickle".to_owned(),
                device: 0,
                summary: "x".to_owned(),
            }],
            warnings: vec![],
        };
        let html = write_html(&template, &embedded).unwrap();
        assert_eq!(template_of(&html).unwrap(), template);
        assert_eq!(template_of(&template).unwrap(), template);
        assert_eq!(template_of("<html></html>"), Err(BundleError::NotATemplate));
    }

    #[test]
    fn refuses_what_is_not_a_template_or_a_bundle() {
        assert_eq!(
            write_html(
                "<html></html>",
                &Embedded {
                    hash: String::new(),
                    ranks: vec![],
                    anomalies: vec![],
                    warnings: vec![]
                }
            ),
            Err(BundleError::NotATemplate)
        );
        assert_eq!(read_html("<html></html>"), Err(BundleError::NoData));
        let bad = "<script type=\"application/json\" id=\"memscope-embedded\">{\"version\":1,\"hash\":\"\",\"ranks\":[\"a\"]}</script><script type=\"application/octet-stream\" class=\"memscope-rank\" data-name=\"a\">!!</script>";
        assert!(matches!(read_html(bad), Err(BundleError::Rank { .. })));
    }
}
