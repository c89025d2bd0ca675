//! `fsdelta serve`: a lab's window on its store (issue 40): home, histories with change points,
//! the alerts inbox with triage, comparisons as permalinks, runs, machines and jobs, served as
//! HTML over HTTP.
//!
//! Why a room of its own: it is a second edge beside `cli` (HTTP instead of a terminal). It
//! reads through the reading room (`read`), judges with `compare` and renders with `report` and
//! its own page frame (`html`); the store calls run on tokio's blocking pool, each request with
//! a read-only session from [`pool`]. The only writes are triage records and the alerts the
//! sweep raises ([`sweep`]), through one writable session, and only when a token is configured.
//!
//! Security: binds where `--listen` says (127.0.0.1 by default); triage needs the token
//! (compared in constant time, [`auth`]) and a same-origin form with this process's form
//! secret; every stored text is escaped ([`html::esc`]); every response carries a
//! Content-Security-Policy that allows only the binary's own script and stylesheet; request
//! bodies, query strings, concurrent requests and request times are bounded. This room must
//! never put a secret (a URL password, the token) in a page or a log line, never answer a bad
//! parameter with a 500 or a panic, and never write anything but triage and alerts.

pub mod auth;
pub mod cache;
pub mod chart;
pub mod chase;
pub mod html;
pub mod pages;
pub mod pool;
pub mod sweep;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Form, Path as UrlPath, Query, State};
use axum::http::{HeaderMap, HeaderValue, Request, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The longest a request may take before it is answered 503.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// The largest request body accepted (a triage form).
pub const MAX_BODY: usize = 16 * 1024;

/// The longest query string accepted.
pub const MAX_QUERY: usize = 4096;

/// Requests served at once; more wait their turn (within [`REQUEST_TIMEOUT`]).
pub const MAX_CONCURRENT: usize = 32;

/// The Content-Security-Policy of every page: nothing but the binary's own script and
/// stylesheet, images only inline (SVG data URLs of flame graphs), forms only to this server,
/// never framed by another site.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     form-action 'self'; frame-src 'self'; frame-ancestors 'self'; base-uri 'none'";

const APP_JS: &str = include_str!("app.js");
const APP_CSS: &str = include_str!("app.css");

/// How `fsdelta serve` was asked to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// The store (path or URL; shown only redacted).
    pub location: String,
    /// Where to listen.
    pub listen: SocketAddr,
    /// The triage token, when triage is enabled.
    pub token: Option<String>,
    /// How often the sweep looks for new alerts (with a token only).
    pub sweep_every: Duration,
}

/// Errors of the server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address cannot be bound.
    #[error("cannot listen on {addr}: {source}; choose another address with --listen")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The runtime failed.
    #[error("the web server stopped: {0}")]
    Runtime(std::io::Error),
    /// The writable session of triage cannot be opened.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// What every request shares.
pub struct App {
    /// Read-only sessions.
    pub pool: pool::Pool,
    /// The store as it may be shown (a URL's password removed).
    pub shown: String,
    /// The store's location (never shown: it may carry a password).
    location: String,
    /// The triage token.
    token: Option<String>,
    /// The secret of this process's triage forms.
    form_secret: String,
    /// The writable session (triage, sweep); opened on first use and after a failure.
    writer: std::sync::Mutex<Option<Box<dyn crate::store::Store>>>,
    /// Requests served at once.
    slots: tokio::sync::Semaphore,
    /// Idle connections to the fleet's queue (PostgreSQL stores).
    pub queues: pool::QueuePool,
    /// What the pages computed, while the store has not changed.
    pub caches: pages::Caches,
}

impl App {
    /// The shared state of a server of `cfg`.
    pub fn new(cfg: &Config) -> App {
        App {
            pool: pool::Pool::new(&cfg.location, MAX_CONCURRENT),
            shown: shown(&cfg.location),
            location: cfg.location.clone(),
            token: cfg.token.clone(),
            form_secret: auth::new_form_secret(),
            writer: std::sync::Mutex::new(None),
            slots: tokio::sync::Semaphore::new(MAX_CONCURRENT),
            queues: pool::QueuePool::new(&cfg.location, 4),
            caches: pages::Caches::default(),
        }
    }

    /// Whether the store is a PostgreSQL one (it may have a fleet's queue).
    pub fn is_postgres(&self) -> bool {
        crate::store::Backend::of(&self.location) == crate::store::Backend::Postgres
    }

    /// Whether triage is enabled (a token was given).
    pub fn triage_enabled(&self) -> bool {
        self.token.is_some()
    }

    /// The form secret, for the hidden field of triage forms.
    pub fn form_secret(&self) -> &str {
        &self.form_secret
    }

    /// Run `f` with the writable session, opening it if needed; a session that failed is
    /// dropped so the next call reopens it.
    pub fn with_writer<T>(
        &self,
        f: impl FnOnce(&mut dyn crate::store::Store) -> Result<T, crate::store::StoreError>,
    ) -> Result<T, crate::store::StoreError> {
        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        if w.is_none() {
            *w = Some(pool::open_writable(&self.location)?);
        }
        let r = f(w.as_deref_mut().expect("opened above"));
        if r.as_ref().is_err_and(pool::is_away) {
            *w = None;
        }
        r
    }
}

/// The store as a page or log line may show it.
pub fn shown(location: &str) -> String {
    match crate::store::Backend::of(location) {
        crate::store::Backend::Postgres => crate::store::pgconn::PgTarget::parse(location)
            .map(|t| format!("postgres {}", t.shown))
            .unwrap_or_else(|_| crate::store::pgconn::redact(location)),
        crate::store::Backend::Sqlite => location.to_string(),
    }
}

/// An answer that is not a page: status and a message (plain text, escaped when shown).
#[derive(Clone, Debug)]
pub struct PageError {
    /// The status.
    pub status: StatusCode,
    /// What went wrong and what to do.
    pub message: String,
}

impl PageError {
    /// A 400 with `message`.
    pub fn bad(message: impl Into<String>) -> PageError {
        PageError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }

    /// A 404 with `message`.
    pub fn not_found(message: impl Into<String>) -> PageError {
        PageError {
            status: StatusCode::NOT_FOUND,
            message: message.into(),
        }
    }
}

impl From<crate::store::StoreError> for PageError {
    fn from(e: crate::store::StoreError) -> PageError {
        use crate::store::StoreError as E;
        let status = match &e {
            E::Open { .. } | E::Backend(_) => StatusCode::SERVICE_UNAVAILABLE,
            E::NoMatch(_) => StatusCode::NOT_FOUND,
            E::BadSelector(_) | E::Unsupported(_) => StatusCode::BAD_REQUEST,
            E::TooNew { .. } | E::Corrupt(_) | E::UuidTaken(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let mut message = e.to_string();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            message.push_str(
                ". The server keeps running and reopens the store on the next request: reload \
                 this page when the store is back.",
            );
        }
        PageError { status, message }
    }
}

impl From<crate::read::ReadError> for PageError {
    fn from(e: crate::read::ReadError) -> PageError {
        match e {
            crate::read::ReadError::Store(s) => s.into(),
            other => PageError::bad(other.to_string()),
        }
    }
}

impl From<crate::compare::judge::JudgeError> for PageError {
    fn from(e: crate::compare::judge::JudgeError) -> PageError {
        PageError::bad(e.to_string())
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let title = match self.status {
            StatusCode::BAD_REQUEST => "Bad request",
            StatusCode::NOT_FOUND => "Not found",
            StatusCode::FORBIDDEN => "Forbidden",
            StatusCode::SERVICE_UNAVAILABLE => "Store unavailable",
            _ => "Error",
        };
        let body = format!(
            "<p class=\"error\">{}</p><p><a href=\"/\">Home</a></p>",
            html::esc(&self.message)
        );
        (self.status, Html(html::page(title, &body))).into_response()
    }
}

/// An HTML page body.
pub struct Html(pub String);

impl IntoResponse for Html {
    fn into_response(self) -> Response {
        ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], self.0).into_response()
    }
}

/// Run `f` with a read-only session on the blocking pool, within the request's bounds.
pub async fn with_store<T: Send + 'static>(
    app: &Arc<App>,
    f: impl FnOnce(&dyn crate::store::Store) -> Result<T, PageError> + Send + 'static,
) -> Result<T, PageError> {
    let a = Arc::clone(app);
    let task = tokio::task::spawn_blocking(move || {
        let store = a.pool.get()?;
        let r = f(store.as_ref());
        match &r {
            Err(e) if e.status == StatusCode::SERVICE_UNAVAILABLE => a.pool.clear(),
            _ => a.pool.put(store),
        }
        r
    });
    blocking(task).await
}

/// Run `f` with the writable session on the blocking pool.
pub async fn with_writer<T: Send + 'static>(
    app: &Arc<App>,
    f: impl FnOnce(&mut dyn crate::store::Store) -> Result<T, crate::store::StoreError> + Send + 'static,
) -> Result<T, PageError> {
    let a = Arc::clone(app);
    let task = tokio::task::spawn_blocking(move || a.with_writer(f).map_err(PageError::from));
    blocking(task).await
}

async fn blocking<T>(task: tokio::task::JoinHandle<Result<T, PageError>>) -> Result<T, PageError> {
    match task.await {
        Ok(r) => r,
        Err(e) => Err(PageError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: format!("the page failed: {e}"),
        }),
    }
}

/// Headers of every response, request bounds: the CSP and friends, the query length, the
/// number of requests at once and the time a request may take.
async fn guard(State(app): State<Arc<App>>, req: Request<Body>, next: Next) -> Response {
    if req.uri().query().is_some_and(|q| q.len() > MAX_QUERY) {
        return PageError {
            status: StatusCode::URI_TOO_LONG,
            message: format!("the query string is longer than {MAX_QUERY} bytes"),
        }
        .into_response();
    }
    let work = async {
        let _slot = app.slots.acquire().await;
        next.run(req).await
    };
    let mut resp = match tokio::time::timeout(REQUEST_TIMEOUT, work).await {
        Ok(r) => r,
        Err(_) => PageError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: format!(
                "the page took longer than {} s (the store is slow or away); reload later",
                REQUEST_TIMEOUT.as_secs()
            ),
        }
        .into_response(),
    };
    let h = resp.headers_mut();
    if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CSP),
        );
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// The query pairs of a request, or a 400 naming what is malformed.
pub type Params = Vec<(String, String)>;

fn params(
    q: Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Result<Params, PageError> {
    q.map(|Query(p)| p)
        .map_err(|e| PageError::bad(format!("malformed query string: {}", e.body_text())))
}

fn id_of(raw: &str, what: &str) -> Result<i64, PageError> {
    raw.parse::<i64>()
        .ok()
        .filter(|v| *v > 0)
        .ok_or_else(|| PageError::bad(format!("'{raw}' is not a {what} id (a positive number)")))
}

/// The router of the server (also what the tests drive).
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(home))
        .route("/history", get(history))
        .route("/alerts", get(alerts))
        .route("/alerts/{id}", get(alert))
        .route("/alerts/{id}/triage", post(triage))
        .route("/compare", get(compare))
        .route("/compare/report", get(compare_report))
        .route("/runs", get(runs))
        .route("/run/{id}", get(run))
        .route("/run/{id}/flame/{sample}", get(flame))
        .route("/machines", get(machines))
        .route("/jobs", get(jobs))
        .route("/static/app.js", get(js))
        .route("/static/app.css", get(css))
        .route("/healthz", get(healthz))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(Arc::clone(&app), guard))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(app)
}

type Q = Result<Query<Params>, axum::extract::rejection::QueryRejection>;

async fn home(State(app): State<Arc<App>>) -> Result<Html, PageError> {
    let a = Arc::clone(&app);
    with_store(&app, move |s| pages::home(s, &a)).await
}

async fn history(State(app): State<Arc<App>>, q: Q) -> Result<Html, PageError> {
    let p = params(q)?;
    let a = Arc::clone(&app);
    with_store(&app, move |s| pages::history(s, &a.caches, &p)).await
}

async fn alerts(State(app): State<Arc<App>>, q: Q) -> Result<Html, PageError> {
    let p = params(q)?;
    let triage = app.triage_enabled();
    with_store(&app, move |s| pages::alerts(s, &p, triage)).await
}

async fn alert(
    State(app): State<Arc<App>>,
    UrlPath(id): UrlPath<String>,
) -> Result<Html, PageError> {
    let id = id_of(&id, "alert")?;
    let form = app.triage_enabled().then(|| app.form_secret().to_string());
    with_store(&app, move |s| pages::alert(s, id, form.as_deref())).await
}

async fn triage(
    State(app): State<Arc<App>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    form: Result<Form<Params>, axum::extract::rejection::FormRejection>,
) -> Response {
    match triage_inner(app, id, headers, form).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn triage_inner(
    app: Arc<App>,
    id: String,
    headers: HeaderMap,
    form: Result<Form<Params>, axum::extract::rejection::FormRejection>,
) -> Result<Response, PageError> {
    let id = id_of(&id, "alert")?;
    let forbidden = |m: &str| PageError {
        status: StatusCode::FORBIDDEN,
        message: m.to_string(),
    };
    let Some(token) = app.token.clone() else {
        return Err(forbidden(
            "triage is off on this server: start it with --token-file FILE",
        ));
    };
    let hv = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
    if !auth::same_origin(hv("origin"), hv("sec-fetch-site"), hv("host")) {
        return Err(forbidden(
            "a triage must be sent from this server's own alert page (cross-site request refused)",
        ));
    }
    let Form(f) = form.map_err(|e| PageError {
        status: e.status(),
        message: format!("the form cannot be read: {}", e.body_text()),
    })?;
    let field = |k: &str| {
        f.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    };
    if !auth::token_matches(field("csrf"), app.form_secret()) {
        return Err(forbidden(
            "the form is stale or from elsewhere: reload the alert page and send it again",
        ));
    }
    if !auth::token_matches(field("token"), &token) {
        return Err(forbidden("wrong token: triage needs the server's token"));
    }
    let state = crate::store::AlertState::parse(field("state")).ok_or_else(|| {
        PageError::bad(format!(
            "'{}' is not a triage state (new, acknowledged, invalid, expected, fixed)",
            field("state")
        ))
    })?;
    let who = field("who").trim();
    if who.is_empty() {
        return Err(PageError::bad("say who triages (the 'who' field)"));
    }
    let t = crate::store::Triage {
        state,
        note: field("note").to_string(),
        who: who.to_string(),
        at: chrono::Utc::now(),
    };
    let found = with_writer(&app, move |w| w.triage_alert(id, &t)).await?;
    if !found {
        return Err(PageError::not_found(format!("no alert {id}")));
    }
    Ok((
        StatusCode::SEE_OTHER,
        [(header::LOCATION, format!("/alerts/{id}"))],
    )
        .into_response())
}

async fn compare(State(app): State<Arc<App>>, q: Q) -> Result<Html, PageError> {
    let p = params(q)?;
    let a = Arc::clone(&app);
    with_store(&app, move |s| pages::compare(s, &a.caches, &p)).await
}

async fn compare_report(State(app): State<Arc<App>>, q: Q) -> Result<Response, PageError> {
    let p = params(q)?;
    let a = Arc::clone(&app);
    let html = with_store(&app, move |s| pages::compare_report(s, &a.caches, &p)).await?;
    // The report is one self-contained document with its own inline stylesheet and script,
    // written by this binary: allowed by their hashes, and nothing else.
    let csp = pages::report_csp(&html);
    let mut resp = Html(html).into_response();
    if let Ok(v) = HeaderValue::from_str(&csp) {
        resp.headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, v);
    }
    Ok(resp)
}

async fn runs(State(app): State<Arc<App>>, q: Q) -> Result<Html, PageError> {
    let p = params(q)?;
    let a = Arc::clone(&app);
    with_store(&app, move |s| pages::runs(s, &a.caches, &p)).await
}

async fn run(State(app): State<Arc<App>>, UrlPath(id): UrlPath<String>) -> Result<Html, PageError> {
    let id = id_of(&id, "run")?;
    let a = Arc::clone(&app);
    with_store(&app, move |s| pages::run(s, &a.caches, id)).await
}

async fn flame(
    State(app): State<Arc<App>>,
    UrlPath((run, sample)): UrlPath<(String, String)>,
) -> Result<Response, PageError> {
    let run = id_of(&run, "run")?;
    let sample = id_of(sample.trim_end_matches(".svg"), "sample")?;
    let svg = with_store(&app, move |s| pages::flame(s, run, sample)).await?;
    Ok((
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; style-src 'unsafe-inline'; script-src 'none'",
            ),
        ],
        svg,
    )
        .into_response())
}

async fn machines(State(app): State<Arc<App>>) -> Result<Html, PageError> {
    let a = Arc::clone(&app);
    with_store(&app, move |s| pages::machines(s, &a)).await
}

async fn jobs(State(app): State<Arc<App>>, q: Q) -> Result<Html, PageError> {
    let p = params(q)?;
    let a = Arc::clone(&app);
    with_store(&app, move |_| pages::jobs(&a, &p)).await
}

async fn js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        APP_JS,
    )
        .into_response()
}

async fn css() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], APP_CSS).into_response()
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn not_found() -> PageError {
    PageError::not_found("no such page")
}

/// Serve until interrupted (SIGINT or SIGTERM). Prints where it listens (the store shown
/// redacted), and runs the alert sweep every `cfg.sweep_every` when triage is enabled.
pub fn serve(cfg: Config) -> Result<(), ServeError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(MAX_CONCURRENT + 2)
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)?;
    rt.block_on(async move {
        let app = Arc::new(App::new(&cfg));
        let listener = tokio::net::TcpListener::bind(cfg.listen)
            .await
            .map_err(|source| ServeError::Bind {
                addr: cfg.listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(ServeError::Runtime)?;
        println!(
            "fsdelta serve: http://{addr}/ over {} (triage {})",
            app.shown,
            if app.triage_enabled() {
                "on: token required"
            } else {
                "off: no --token-file"
            }
        );
        if app.triage_enabled() {
            let a = Arc::clone(&app);
            let every = cfg.sweep_every;
            tokio::spawn(async move {
                let mut first = true;
                loop {
                    let b = Arc::clone(&a);
                    let t0 = std::time::Instant::now();
                    let r = tokio::task::spawn_blocking(move || sweep::sweep_app(&b)).await;
                    let swept = matches!(r, Ok(Ok(_)));
                    match r {
                        // The first sweep that ends is said (a lab sees how long it takes on its
                        // store; benches/serve-load.sh waits for it), later ones only when
                        // they found something.
                        Ok(Ok(n)) if first => println!(
                            "fsdelta serve: first alert sweep: {n} new alerts in {:.1} s",
                            t0.elapsed().as_secs_f64()
                        ),
                        Ok(Ok(n)) if n > 0 => println!("fsdelta serve: {n} new alerts"),
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => eprintln!("fsdelta serve: alert sweep: {e}"),
                        Err(e) => eprintln!("fsdelta serve: alert sweep failed: {e}"),
                    }
                    first &= !swept;
                    tokio::time::sleep(every).await;
                }
            });
        }
        axum::serve(listener, router(app).into_make_service())
            .with_graceful_shutdown(shutdown())
            .await
            .map_err(ServeError::Runtime)
    })
}

async fn shutdown() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
