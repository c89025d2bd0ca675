//! `fsdelta serve` in a real browser: headless Chromium driven through WebDriver
//! (`chromedriver`, Debian's chromium-driver), spoken over HTTP with this file's own small
//! client. Opens home, goes to a history, opens an alert, acknowledges it with the token,
//! opens the compare from the change point on the chart (the server's script), copies the mail
//! text; then the same pages 400 px wide, where nothing may be wider than the window. The
//! browser's console must report no Content-Security-Policy violation. Screenshots are kept
//! under target/tmp/serve-browser/. Skipped (with why) without chromium and chromedriver,
//! unless FSDELTA_REQUIRE_ALL=1.

mod serve_common;
use serde_json::{Value, json};
use serve_common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn available(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn require(ok: bool, what: &str) -> bool {
    if ok {
        return true;
    }
    if std::env::var("FSDELTA_REQUIRE_ALL").as_deref() == Ok("1") {
        panic!("FSDELTA_REQUIRE_ALL=1 but this test needs {what}");
    }
    eprintln!("SKIPPED: this test needs {what}");
    false
}

/// chromedriver on a free loopback port, killed on drop.
struct Driver {
    child: Child,
    addr: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    fn start(log: &Path) -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap();
        let d = Driver {
            child,
            addr: format!("127.0.0.1:{port}"),
        };
        for _ in 0..300 {
            if std::net::TcpStream::connect(&d.addr).is_ok() {
                let v = d.call("GET", "/status", None);
                if v["value"]["ready"] == json!(true) {
                    return d;
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("chromedriver did not become ready in 30 s");
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let text = body.map(|b| b.to_string()).unwrap_or_default();
        let headers: &[(&str, &str)] = if text.is_empty() {
            &[]
        } else {
            &[("Content-Type", "application/json")]
        };
        let r = request(&self.addr, method, path, headers, &text);
        serde_json::from_str(&r.body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}: {} {}", r.status, r.body))
    }
}

/// A browser session.
struct Session<'a> {
    d: &'a Driver,
    id: String,
    shots: PathBuf,
}

impl Session<'_> {
    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let v = self
            .d
            .call(method, &format!("/session/{}{path}", self.id), body);
        if v["value"].get("error").is_some() {
            panic!("{method} {path}: {}", v["value"]);
        }
        v["value"].clone()
    }

    fn go(&self, url: &str) {
        self.cmd("POST", "/url", Some(json!({ "url": url })));
    }

    fn url(&self) -> String {
        self.cmd("GET", "/url", None).as_str().unwrap().to_string()
    }

    fn find(&self, css: &str) -> String {
        let v = self.cmd(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        );
        v[ELEMENT].as_str().unwrap().to_string()
    }

    fn click(&self, css: &str) {
        let e = self.find(css);
        self.cmd("POST", &format!("/element/{e}/click"), Some(json!({})));
    }

    fn type_in(&self, css: &str, text: &str) {
        let e = self.find(css);
        self.cmd(
            "POST",
            &format!("/element/{e}/value"),
            Some(json!({ "text": text })),
        );
    }

    fn text(&self, css: &str) -> String {
        let e = self.find(css);
        self.cmd("GET", &format!("/element/{e}/text"), None)
            .as_str()
            .unwrap()
            .to_string()
    }

    fn js(&self, script: &str) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    /// Wait (polling, up to 30 s) until `script` returns true.
    fn until(&self, what: &str, script: &str) {
        for _ in 0..300 {
            if self.js(script) == json!(true) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{what}: not true after 30 s ({})", self.url());
    }

    fn shot(&self, name: &str) {
        use base64::Engine as _;
        let b64 = self.cmd("GET", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(b64.as_str().unwrap())
            .unwrap();
        assert!(png.starts_with(b"\x89PNG"));
        std::fs::write(self.shots.join(format!("{name}.png")), png).unwrap();
    }

    /// The page fits the window: nothing scrolls sideways.
    fn fits(&self, what: &str) {
        let v = self.js("return [document.documentElement.scrollWidth, window.innerWidth];");
        let (w, inner) = (v[0].as_f64().unwrap(), v[1].as_f64().unwrap());
        assert!(
            w <= inner + 1.0,
            "{what}: {w} px wide in a {inner} px window"
        );
    }

    /// The browser's console messages since the last call.
    fn console(&self) -> Vec<String> {
        let v = self.d.call(
            "POST",
            &format!("/session/{}/se/log", self.id),
            Some(json!({"type": "browser"})),
        );
        v["value"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|m| m["message"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn width(&self, w: u32) {
        self.cmd(
            "POST",
            "/goog/cdp/execute",
            Some(json!({"cmd": "Emulation.setDeviceMetricsOverride",
                "params": {"width": w, "height": 900, "deviceScaleFactor": 1, "mobile": w < 600}})),
        );
    }
}

#[test]
fn home_history_alert_triage_compare_and_copy_in_chromium_at_1400_and_400_px() {
    if !require(
        available("chromium") && available("chromedriver"),
        "chromium and chromedriver (apt-get install chromium chromium-driver)",
    ) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.sqlite");
    fill(&db);
    let token = token_file(d.path());
    let server = Server::start(db.to_str().unwrap(), Some(&token), d.path());
    let base = format!("http://{}", server.addr);
    // The sweep has raised the change before the browser looks.
    let alert_path = wait_for_alert(&server);

    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("serve-browser");
    std::fs::create_dir_all(&shots).unwrap();
    let driver = Driver::start(&d.path().join("chromedriver.log"));
    let profile = d.path().join("chromium-profile");
    let caps = json!({"capabilities": {"alwaysMatch": {
        "browserName": "chrome",
        "goog:loggingPrefs": {"browser": "ALL"},
        "goog:chromeOptions": {"args": [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--window-size=1400,1000",
            format!("--user-data-dir={}", profile.display()),
        ]}
    }}});
    let v = driver.call("POST", "/session", Some(caps));
    let id = v["value"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no session: {v}"))
        .to_string();
    let s = Session {
        d: &driver,
        id,
        shots: shots.clone(),
    };
    s.width(1400);

    // Home, then a history through its link.
    s.go(&format!("{base}/"));
    s.shot("1400-home");
    s.click("a.history-link");
    s.until(
        "the history page",
        "return location.pathname === '/history';",
    );
    let history_url = s.url();
    assert!(s.text("h1").contains("History of smallfiles files_per_sec"));
    s.shot("1400-history");
    // The command that chases the change, as text a terminal takes.
    let cmd = s.text("#bisect-cmd");
    assert!(
        cmd.starts_with("fsdelta bisect --kernel --repo <linux tree>")
            && cmd.ends_with("--test smallfiles --metric files_per_sec"),
        "{cmd}"
    );

    // The alert, acknowledged with the token.
    s.go(&format!("{base}/alerts"));
    s.click("a.alert-link");
    s.until(
        "the alert page",
        &format!("return location.pathname === '{alert_path}';"),
    );
    assert_eq!(s.text("#state"), "new");
    s.click("#triage-state option[value=acknowledged]");
    s.type_in("#triage-note", "looking at it <script>");
    s.type_in("#triage-who", "ana");
    s.type_in("#triage-token", TOKEN);
    s.click("#triage-save");
    s.until(
        "the triage saved",
        "var e = document.getElementById('state'); return !!e && e.textContent === 'acknowledged';",
    );
    assert_eq!(s.text("#note"), "looking at it <script>");
    s.shot("1400-alert-acknowledged");

    // The compare of the segments around the change, from a click on the chart.
    s.go(&history_url);
    s.click("g.cp rect.cp-hit");
    s.until(
        "the compare page",
        "return location.pathname === '/compare';",
    );
    assert!(s.url().contains("sel=runs%3A6%2C5"), "{}", s.url());
    assert!(s.text("#mail").to_lowercase().contains("regressed"));
    s.click("#copy-mail");
    s.until(
        "the mail text copied or selected",
        "var t = document.getElementById('copied-mail').textContent; return t.length > 0;",
    );
    let said = s.text("#copied-mail");
    let mail_len = s.js("return document.getElementById('mail').textContent.length;");
    assert!(
        said.ends_with(&format!("{mail_len} characters"))
            || said.contains(&format!("{mail_len} characters:")),
        "the button says what it copied: {said:?}, {mail_len}"
    );
    let selected = s.js(
        "return window.getSelection().toString().trim() === document.getElementById('mail').textContent.trim();",
    );
    assert_eq!(selected, json!(true), "the mail text is selected ({said})");
    let mail = s.js("return document.getElementById('mail').textContent;");
    assert!(
        mail.as_str()
            .unwrap()
            .lines()
            .all(|l| l.chars().count() <= 80),
        "80 columns: {mail}"
    );
    s.shot("1400-compare");

    // A point of the chart opens its run.
    s.go(&history_url);
    s.click("g.run-7 rect.pt-hit");
    s.until("the run page", "return location.pathname === '/run/7';");

    // 400 px wide: the same pages fit.
    s.width(400);
    for (name, url) in [
        ("home", format!("{base}/")),
        ("history", history_url.clone()),
        ("alerts", format!("{base}/alerts")),
        ("alert", format!("{base}{alert_path}")),
        ("compare", format!("{base}/compare?sel=1&sel=12")),
        ("run", format!("{base}/run/7")),
    ] {
        s.go(&url);
        s.fits(name);
        s.shot(&format!("400-{name}"));
    }
    // The console is really read: a message written now is in it.
    s.js("console.error('fsdelta-console-probe'); return true;");
    let console = s.console();
    assert!(
        console.iter().any(|m| m.contains("fsdelta-console-probe")),
        "the browser's console cannot be read: {console:?}"
    );
    let csp: Vec<String> = console
        .into_iter()
        .filter(|m| m.contains("Content Security Policy") || m.contains("Refused"))
        .collect();
    assert!(csp.is_empty(), "CSP violations: {csp:?}");
    s.d.call("DELETE", &format!("/session/{}", s.id), None);
    eprintln!("screenshots in {}", shots.display());
}
