//! A body as a short preview, read as what it is. Salesforce's Task and Event `Description`
//! is plain text ("Task", Object Reference: a `textarea`): its `<` and `>` are the words as
//! written. HubSpot's note, call, meeting and task bodies are rich text (HTML, as HubSpot's
//! engagement guides show them, e.g. `hs_note_body` "<div>...</div>"): their tags go and every
//! entity, named or numeric, is read. HubSpot's `hs_email_text` is the e-mail's plain text.

/// Most characters of a preview; longer bodies end with an ellipsis.
pub(crate) const PREVIEW_CHARS: usize = 160;

/// How a body is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Markup {
    /// Plain text: kept as written.
    Plain,
    /// HTML: tags dropped (a tag between words is a space), the content of `script` and
    /// `style` and comments dropped, entities decoded.
    Html,
}

/// A body as a short preview: whitespace collapsed, cut at [`PREVIEW_CHARS`]; `None` when
/// nothing but whitespace (or markup) is left.
pub(crate) fn preview(body: &str, markup: Markup) -> Option<String> {
    let text = match markup {
        Markup::Plain => std::borrow::Cow::Borrowed(body),
        Markup::Html => {
            let stripped = strip_tags(body);
            std::borrow::Cow::Owned(html_escape::decode_html_entities(&stripped).into_owned())
        }
    };
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.is_empty() {
        return None;
    }
    if joined.chars().count() <= PREVIEW_CHARS {
        return Some(joined);
    }
    let cut: String = joined.chars().take(PREVIEW_CHARS - 1).collect();
    Some(format!("{}…", cut.trim_end()))
}

/// HTML's text: tags become spaces; comments and the content of `script` and `style` go.
/// Entities are left for the decoder (a `&lt;` in the text is not a tag).
fn strip_tags(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        text.push_str(&rest[..at]);
        let tag = &rest[at..];
        if let Some(comment) = tag.strip_prefix("<!--") {
            rest = comment.find("-->").map_or("", |end| &comment[end + 3..]);
            text.push(' ');
            continue;
        }
        let opens_tag = tag[1..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '/' | '!' | '?'));
        let end = tag.find('>').filter(|_| opens_tag);
        let Some(end) = end else {
            // A `<` that opens no tag (HTML's tag-open state needs a letter, `/`, `!` or `?`
            // next) is text.
            text.push('<');
            rest = &tag[1..];
            continue;
        };
        let name: String = tag[1..end]
            .trim_start()
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_ascii_lowercase();
        rest = &tag[end + 1..];
        if matches!(name.as_str(), "script" | "style") {
            let close = format!("</{name}");
            let lower = rest.to_ascii_lowercase();
            rest = lower
                .find(&close)
                .and_then(|i| rest[i..].find('>').map(|e| &rest[i + e + 1..]))
                .unwrap_or("");
        }
        text.push(' ');
    }
    text.push_str(rest);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Task: plain text whose `<` and `>` are words (`Description`, a `textarea`:
    /// "Task", Object Reference,
    /// <https://developer.salesforce.com/docs/atlas.en-us.object_reference.meta/object_reference/sforce_api_objects_task.htm>).
    #[test]
    fn plain_text_keeps_its_words_as_written() {
        let description = "Budget <50k confirmed; decision > 2 weeks away";
        assert_eq!(
            preview(description, Markup::Plain).as_deref(),
            Some(description)
        );
        assert_eq!(
            preview("Price &amp; terms <b>as sent</b>", Markup::Plain).as_deref(),
            Some("Price &amp; terms <b>as sent</b>"),
            "plain text has no entities or tags to read"
        );
    }

    /// HubSpot's rich text: tags go, every entity is read (named, decimal, hexadecimal). A
    /// note's `hs_note_body` is HTML ("Notes", CRM API guide,
    /// <https://developers.hubspot.com/docs/api-reference/crm-notes-v3/guide>).
    #[test]
    fn html_loses_its_tags_and_reads_every_entity() {
        let body = "<div><p>Maria&#39;s team said &quot;yes&quot; &lt;pending legal&gt;</p>\
                    <p>Caf&eacute; &amp; co &#x2014; &hellip;&nbsp;&euro;5k</p></div>";
        assert_eq!(
            preview(body, Markup::Html).as_deref(),
            Some("Maria's team said \"yes\" <pending legal> Café & co — … €5k")
        );
        assert_eq!(
            preview(
                "<p>a<!-- hidden <b> -->b</p><style>p{x:1}</style>c",
                Markup::Html
            )
            .as_deref(),
            Some("a b c")
        );
        assert_eq!(preview("<br/>", Markup::Html), None);
        assert_eq!(
            preview("3 < 4 and 5 > 2", Markup::Html).as_deref(),
            Some("3 < 4 and 5 > 2"),
            "a bare < that opens no tag is text"
        );
    }

    #[test]
    fn a_long_body_is_cut_with_an_ellipsis() {
        let shown = preview(&"word ".repeat(100), Markup::Plain).unwrap();
        assert!(
            shown.chars().count() <= PREVIEW_CHARS && shown.ends_with('…'),
            "{shown}"
        );
    }
}
