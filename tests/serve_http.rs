//! `fsdelta serve` over real HTTP on loopback: every page of a store with hostile labels is
//! escaped and carries the CSP; the sweep raises the change as an alert; triage needs the
//! token and a same-origin form; malformed parameters are 400 with a message; a store that is
//! away gives an error page and the server recovers when it is back; no secret reaches a page
//! or the log.

mod serve_common;
use serve_common::*;

/// No stored text may come back as markup.
fn assert_escaped(path: &str, body: &str) {
    for bad in [
        "<script>alert",
        "<img src=x",
        "<svg onload",
        "onerror=alert(2)>",
        "'><svg",
    ] {
        assert!(!body.contains(bad), "{path} carries {bad:?} unescaped");
    }
}

fn assert_page(s: &Server, path: &str) -> String {
    let r = s.get(path);
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    let csp = r.header("content-security-policy").unwrap_or("");
    assert!(csp.contains("default-src 'none'"), "{path}: CSP {csp:?}");
    if r.header("content-type")
        .is_some_and(|t| t.starts_with("text/html"))
        && path != "/compare/report"
    {
        assert!(csp.contains("script-src 'self'"), "{path}: CSP {csp:?}");
        assert!(!r.body.contains("<script>"), "{path} has an inline script");
    }
    assert_escaped(path, &r.body);
    r.body
}

#[test]
fn pages_escape_alerts_triage_needs_the_token_and_bad_input_is_400() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.sqlite");
    fill(&db);
    let token = token_file(d.path());
    let s = Server::start(db.to_str().unwrap(), Some(&token), d.path());

    let home = assert_page(&s, "/");
    assert!(
        home.contains("&lt;script&gt;alert(1)&lt;/script&gt;")
            || home.contains("&quot;&gt;&lt;img"),
        "{home}"
    );
    let history = href_after(&home, "class=\"history-link\"").expect("a history link");
    let h = assert_page(&s, &history);
    assert!(h.contains("class=\"cp-link\""), "the change is found: {h}");
    // The runs around the change measured kernels 6.18.0-5 and 6.18.0-6 on the host and name
    // no commit: a kernel bisection whose ends' commits are to be filled in.
    assert!(
        h.contains(
            "fsdelta bisect --kernel --repo &lt;linux tree&gt; --config &lt;guest configuration \
             file&gt; --good &lt;commit of kernel 6.18.0-5&gt; --bad &lt;commit of kernel \
             6.18.0-6&gt; --suite quick --test smallfiles --metric files_per_sec"
        ),
        "{h}"
    );
    assert!(h.contains("the host&#39;s own kernel"), "{h}");
    let cmp = href_after(&h, "class=\"cp-link\"").unwrap();
    assert!(cmp.starts_with("/compare?sel=runs%3A6%2C5"), "{cmp}");
    let c = assert_page(&s, &cmp);
    assert!(
        c.contains("id=\"mail\"") && c.to_lowercase().contains("regressed"),
        "{c}"
    );
    let report = href_after(&c, "id=\"report-link\"").unwrap();
    let r = s.get(&report);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_escaped(&report, &r.body);
    let csp = r.header("content-security-policy").unwrap();
    assert!(
        csp.contains("script-src 'sha256-") && !csp.contains("unsafe-inline"),
        "{csp}"
    );

    for p in [
        "/runs",
        "/run/1",
        "/run/12",
        "/machines",
        "/jobs",
        "/alerts",
        "/compare",
        "/compare?sel=1&sel=12&sel=7",
    ] {
        assert_page(&s, p);
    }

    let run12 = assert_page(&s, "/run/12");
    let flame = href_after(&run12, "<figure class=\"flame\">").expect("a flame graph");
    let f = s.get(&flame);
    assert_eq!(f.status, 200, "{flame}: {}", f.body);
    assert_eq!(f.header("content-type"), Some("image/svg+xml"));
    assert!(
        f.body.contains("ext4_file_write_iter") && !f.body.contains("<evil>"),
        "{}",
        f.body
    );
    let other = flame.replacen("/run/12/", "/run/1/", 1);
    assert_eq!(s.get(&other).status, 404, "a sample of another run");

    // The sweep raised the change at run 7.
    let alert = wait_for_alert(&s);
    let a = assert_page(&s, &alert);
    assert!(a.contains("id=\"state\">new<"), "{a}");
    let id = alert.rsplit('/').next().unwrap();
    let csrf = {
        let at = a.find("name=\"csrf\" value=\"").unwrap() + 19;
        a[at..at + 64].to_string()
    };
    let host = s.addr.clone();
    let origin = format!("http://{host}");
    let same = [("Origin", origin.as_str())];
    let form = |tok: &str, csrf: &str| {
        format!(
            "csrf={csrf}&state=acknowledged&who=ana&note=%3Cscript%3Ealert(4)%3C%2Fscript%3E&token={}",
            tok.replace('-', "%2D")
        )
    };
    let path = format!("/alerts/{id}/triage");
    // Wrong token, missing form secret, another site: refused, nothing written.
    assert_eq!(
        s.post(&path, &same, &form("wrong-token-wrong-token", &csrf))
            .status,
        403
    );
    assert_eq!(s.post(&path, &same, &form(TOKEN, "0")).status, 403);
    let evil = [
        ("Origin", "http://evil.example"),
        ("Sec-Fetch-Site", "cross-site"),
    ];
    assert_eq!(s.post(&path, &evil, &form(TOKEN, &csrf)).status, 403);
    assert!(s.get(&alert).body.contains("id=\"state\">new<"));
    // A bad state is 400.
    let bad = form(TOKEN, &csrf).replace("acknowledged", "bogus");
    assert_eq!(s.post(&path, &same, &bad).status, 400);
    // The right one.
    let ok = s.post(&path, &same, &form(TOKEN, &csrf));
    assert_eq!(ok.status, 303, "{}", ok.body);
    let a = assert_page(&s, &alert);
    assert!(a.contains("id=\"state\">acknowledged<"), "{a}");
    assert!(
        a.contains("&lt;script&gt;alert(4)&lt;/script&gt;"),
        "the note, escaped: {a}"
    );
    let inbox = assert_page(&s, "/alerts?state=acknowledged");
    assert!(inbox.contains(&format!("/alerts/{id}")), "{inbox}");
    assert!(!assert_page(&s, "/alerts?state=new").contains(&format!("/alerts/{id}\"")));

    for p in [
        "/run/abc",
        "/run/-3",
        "/alerts/x",
        "/history",
        "/history?test=smallfiles",
        "/alerts?state=bogus",
        "/compare?sel=runs:1,x&sel=2",
        "/compare?sel=1",
        "/runs?limit=0",
        "/runs?limit=abc",
        "/jobs?state=zzz",
        "/compare?sel=label:nothing-here&sel=1",
    ] {
        let r = s.get(p);
        assert!(
            r.status == 400 || r.status == 404,
            "{p}: {} {}",
            r.status,
            r.body
        );
        assert!(r.body.contains("class=\"error\""), "{p}: {}", r.body);
    }
    let long = format!("/runs?label={}", "x".repeat(5000));
    assert_eq!(s.get(&long).status, 414);
    let big = "x".repeat(64 * 1024);
    assert_eq!(s.post(&path, &same, &big).status, 413);

    drop(s);
    let log = std::fs::read_to_string(d.path().join("serve.log")).unwrap()
        + &std::fs::read_to_string(d.path().join("serve.out")).unwrap_or_default();
    assert!(!log.contains(TOKEN), "the token is in the log: {log}");
}

#[test]
fn a_store_that_is_away_gives_an_error_page_and_the_server_recovers() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("later.sqlite");
    let s = Server::start(db.to_str().unwrap(), None, d.path());
    let r = s.get("/runs");
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(r.body.contains("reopens the store"), "{}", r.body);
    fill(&db);
    let r = s.get("/runs");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("/run/12"));
    // Without a token there is no triage.
    let r = s.post("/alerts/1/triage", &[], "state=new");
    assert_eq!(r.status, 403);
}

#[test]
fn a_postgres_password_never_reaches_a_page() {
    // Nothing listens on port 1: the store is away; the page names it without the password.
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(
        "postgres://lab:s3cr3t-pw@127.0.0.1:1/fsdelta?connect_timeout=1",
        None,
        d.path(),
    );
    let r = s.get("/");
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(!r.body.contains("s3cr3t"), "{}", r.body);
    drop(s);
    let out = std::fs::read_to_string(d.path().join("serve.out")).unwrap_or_default()
        + &std::fs::read_to_string(d.path().join("serve.log")).unwrap();
    assert!(!out.contains("s3cr3t"), "{out}");
}

/// The PostgreSQL administrator URL of the tests, or why they skip.
fn pg_admin() -> Option<String> {
    let url = std::env::var("FSDELTA_TEST_PG")
        .ok()
        .filter(|u| !u.is_empty());
    if url.is_none() {
        if std::env::var("FSDELTA_REQUIRE_ALL").as_deref() == Ok("1") {
            panic!("FSDELTA_REQUIRE_ALL=1 but FSDELTA_TEST_PG is not set");
        }
        eprintln!("SKIPPED: set FSDELTA_TEST_PG to an administrator URL");
    }
    url
}

#[test]
fn a_postgresql_store_that_goes_away_gives_503_and_the_server_recovers_when_it_is_back() {
    let Some(admin) = pg_admin() else { return };
    let scratch = fsdelta::store::postgres::ScratchDatabase::create(&admin).unwrap();
    fill_store(&mut fsdelta::store::postgres::PgStore::open(&scratch.url).unwrap());
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(&scratch.url, None, d.path());
    assert!(assert_page(&s, "/runs").contains("/run/12"));
    assert_page(&s, "/history?test=smallfiles&metric=files_per_sec");
    // The database goes away: no new connection is accepted and the server's are cut, as
    // a server restart or a failover does.
    let mut c = postgres::Client::connect(&admin, postgres::NoTls).unwrap();
    let db = &scratch.name;
    c.batch_execute(&format!("ALTER DATABASE {db} ALLOW_CONNECTIONS false"))
        .unwrap();
    c.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1",
        &[db],
    )
    .unwrap();
    // Pages kept while the store has not changed are served for up to a second
    // (serve::cache::STAMP_EVERY) without asking it; past that every page asks.
    std::thread::sleep(std::time::Duration::from_millis(1300));
    for p in [
        "/runs",
        "/",
        "/history?test=smallfiles&metric=files_per_sec",
    ] {
        let r = s.get(p);
        assert_eq!(r.status, 503, "{p}: {}", r.body);
        assert!(r.body.contains("reopens the store"), "{p}: {}", r.body);
    }
    // Back: the next requests are served, without a restart.
    c.batch_execute(&format!("ALTER DATABASE {db} ALLOW_CONNECTIONS true"))
        .unwrap();
    assert!(assert_page(&s, "/runs").contains("/run/12"));
    assert!(assert_page(&s, "/").contains("class=\"history-link\""));
    assert_page(&s, "/history?test=smallfiles&metric=files_per_sec");
}

#[test]
fn on_postgresql_the_sweep_raises_the_alert_and_triage_is_kept() {
    let Some(admin) = pg_admin() else { return };
    let scratch = fsdelta::store::postgres::ScratchDatabase::create(&admin).unwrap();
    fill_store(&mut fsdelta::store::postgres::PgStore::open(&scratch.url).unwrap());
    let d = tempfile::tempdir().unwrap();
    let token = token_file(d.path());
    let s = Server::start(&scratch.url, Some(&token), d.path());
    let home = assert_page(&s, "/");
    assert!(home.contains("class=\"history-link\""), "{home}");
    let alert = wait_for_alert(&s);
    let a = assert_page(&s, &alert);
    let at = a.find("name=\"csrf\" value=\"").unwrap() + 19;
    let csrf = &a[at..at + 64];
    let origin = format!("http://{}", s.addr);
    let id = alert.rsplit('/').next().unwrap();
    let r = s.post(
        &format!("/alerts/{id}/triage"),
        &[("Origin", &origin)],
        &format!("csrf={csrf}&state=expected&who=bo&note=known&token={TOKEN}"),
    );
    assert_eq!(r.status, 303, "{}", r.body);
    let mut st = fsdelta::store::postgres::PgStore::open_read_only(&scratch.url).unwrap();
    st.set_retry_for(std::time::Duration::from_secs(1));
    use fsdelta::store::Store;
    let kept = st.alert(id.parse().unwrap()).unwrap().unwrap();
    assert_eq!(kept.state, fsdelta::store::AlertState::Expected);
    assert_eq!((kept.who.as_str(), kept.note.as_str()), ("bo", "known"));
    // The history no longer flags an expected change.
    let history = href_after(&home, "class=\"history-link\"").unwrap();
    let h = assert_page(&s, &history);
    assert!(
        h.contains("<td>expected</td>") && !h.contains("<td>flagged</td>"),
        "{h}"
    );
    // A store no fleet used yet has no queue tables: said, not an error.
    let jobs = assert_page(&s, "/jobs");
    assert!(jobs.contains("no job queue yet"), "{jobs}");
    assert!(home.contains("no job queue yet"), "{home}");
    assert_page(&s, "/machines");
}
