use super::*;
use crate::stub::{Recorded, Reply, StubBackend};
use http::Method;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const CREATE: &str = "/sdk/proxy/salesforce/services/data/v62.0/sobjects/Account";
const READ: &str = "/sdk/proxy/salesforce/services/data/v62.0/sobjects/Account/001AAA";

/// A guard against a hang when the behaviour is broken; no test depends on how long it is.
const HANG: Duration = Duration::from_secs(60);

async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(HANG, future)
        .await
        .expect("the proxy never got there")
}

/// The upstream: creates answer 201, everything else 200; it records what reaches it.
fn upstream() -> StubBackend {
    StubBackend::with_handler(|r: &Recorded| match r.method.as_str() {
        "POST" => Reply::json(201, json!({"id": "001NEW", "success": true})),
        _ => Reply::json(200, json!({"Id": "001AAA"})),
    })
}

fn posts(stub: &StubBackend) -> Vec<Recorded> {
    let requests = stub.requests().into_iter();
    requests.filter(|r| r.method == Method::POST).collect()
}

async fn proxy(stub: &StubBackend) -> HoldingProxy {
    HoldingProxy::start("https://broker.example", Arc::new(stub.clone()))
        .await
        .unwrap()
}

/// One HTTP/1.1 request on a connection of its own; the connection, to read from or close.
async fn send(proxy: &HoldingProxy, method: &str, path: &str, body: &str) -> TcpStream {
    let mut stream = TcpStream::connect(proxy.url().trim_start_matches("http://"))
        .await
        .unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nhost: proxy\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

/// The status and body the client got.
async fn answer(mut stream: TcpStream) -> (u16, String) {
    let mut text = String::new();
    stream.read_to_string(&mut text).await.unwrap();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok());
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string());
    (status.expect("a status line"), body.unwrap_or_default())
}

#[test]
fn creates_in_either_crm_are_told_from_searches_reads_updates_and_links() {
    let head = |method: Method, path: &str| RequestHead {
        method,
        path: path.into(),
    };
    let hubspot = "/sdk/proxy/hubspot/crm/v3/objects";
    assert!(head(Method::POST, CREATE).is_create());
    assert!(head(Method::POST, &format!("{hubspot}/contacts")).is_create());
    assert!(head(Method::POST, &format!("{hubspot}/notes")).is_create());
    assert!(!head(Method::POST, &format!("{hubspot}/contacts/search")).is_create());
    assert!(!head(Method::POST, &format!("{hubspot}/companies/merge")).is_create());
    assert!(!head(Method::PATCH, &format!("{hubspot}/contacts/51")).is_create());
    assert!(!head(Method::PATCH, READ).is_create());
    assert!(!head(Method::GET, CREATE).is_create());
}

#[tokio::test]
async fn a_held_create_is_counted_and_reaches_the_upstream_only_when_released() {
    let stub = upstream();
    let proxy = proxy(&stub).await;
    proxy.hold(RequestHead::is_create);
    let (status, _) = answer(send(&proxy, "GET", READ, "").await).await;
    assert_eq!(status, 200, "a read passes at once");

    let client = send(&proxy, "POST", CREATE, r#"{"Name":"Held"}"#).await;
    let held = within(proxy.wait_held(1)).await;
    let create = held[0].clone();
    assert_eq!(create.head.method, Method::POST);
    assert_eq!(create.head.path, CREATE);
    assert!(create.held);
    assert!(create.arrived >= proxy.requests()[0].arrived);
    assert!(
        posts(&stub).is_empty(),
        "the upstream has not seen the create"
    );
    assert_eq!(proxy.count(&Method::POST, CREATE), 1);
    assert_eq!(proxy.count(&Method::GET, READ), 1);
    assert_eq!(proxy.count(&Method::GET, CREATE), 0);

    assert!(proxy.release(create.id));
    assert!(!proxy.release(create.id), "a request is released once");
    let (status, body) = answer(client).await;
    assert_eq!(status, 201);
    assert!(body.contains("001NEW"), "{body}");
    let delivered = posts(&stub);
    assert_eq!(delivered.len(), 1);
    assert_eq!(
        delivered[0].uri.to_string(),
        format!("https://broker.example{CREATE}")
    );
    assert_eq!(delivered[0].body_json(), json!({"Name": "Held"}));
    assert_eq!(
        delivered[0].header("host"),
        None,
        "the client's Host is not passed on"
    );
    let record = within(proxy.settled(create.id)).await;
    assert_eq!(record.fate, Fate::Delivered { status: 201 });
    assert!(!record.client_gone);
}

#[tokio::test]
async fn a_held_create_whose_client_is_gone_is_still_delivered_when_released() {
    let stub = upstream();
    let proxy = proxy(&stub).await;
    proxy.hold(RequestHead::is_create);
    let client = send(&proxy, "POST", CREATE, r#"{"Name":"Orphan"}"#).await;
    let create = within(proxy.wait_held(1)).await.remove(0);

    drop(client); // as a host killed with `kill -9` closes its connections
    let gone = within(proxy.wait_until(create.id, |seen| seen.client_gone)).await;
    assert_eq!(gone.fate, Fate::Held, "still held after its client left");
    assert!(posts(&stub).is_empty());

    assert!(proxy.release(create.id));
    let record = within(proxy.settled(create.id)).await;
    assert_eq!(record.fate, Fate::Delivered { status: 201 });
    assert!(record.client_gone);
    let delivered = posts(&stub);
    assert_eq!(
        delivered.len(),
        1,
        "the upstream applied the orphaned create"
    );
    assert_eq!(delivered[0].body_json(), json!({"Name": "Orphan"}));
}

#[tokio::test]
async fn a_dropped_request_never_reaches_the_upstream_and_holding_can_stop() {
    let stub = upstream();
    let proxy = proxy(&stub).await;
    proxy.hold(RequestHead::is_create);
    let client = send(&proxy, "POST", CREATE, "{}").await;
    let create = within(proxy.wait_held(1)).await.remove(0);
    assert!(proxy.drop_held(create.id));
    let (status, _) = answer(client).await;
    assert_eq!(status, 502);
    assert_eq!(within(proxy.settled(create.id)).await.fate, Fate::Dropped);
    assert!(posts(&stub).is_empty());

    proxy.hold_nothing();
    let (status, _) = answer(send(&proxy, "POST", CREATE, "{}").await).await;
    assert_eq!(status, 201, "nothing is held any more");
    assert_eq!(posts(&stub).len(), 1);
    assert_eq!(proxy.count(&Method::POST, CREATE), 2);
    assert!(proxy.held().is_empty());
}
