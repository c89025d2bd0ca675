// fsdelta serve: the only script of the pages (served from the binary; no inline script).
// Click-through on history charts, and the copy buttons of the comparison page.
"use strict";
document.addEventListener("click", function (ev) {
  var t = ev.target;
  if (!(t instanceof Element)) return;
  var cp = t.closest("g.cp");
  if (cp) {
    var m = /\bcpi-(\d+)\b/.exec(cp.getAttribute("class") || "");
    var link = m && document.getElementById("cp-link-" + m[1]);
    if (link) { window.location.href = link.getAttribute("href"); }
    return;
  }
  var pt = t.closest("g.pt");
  if (pt) {
    var r = /\brun-(\d+)\b/.exec(pt.getAttribute("class") || "");
    if (r) { window.location.href = "/run/" + r[1]; }
    return;
  }
  var btn = t.closest("button.copy");
  if (btn) {
    var id = btn.getAttribute("data-copy");
    var pre = document.getElementById(id);
    var status = document.getElementById("copied-" + id);
    if (!pre) return;
    var text = pre.textContent;
    var say = function (s) { if (status) { status.textContent = s; } };
    // Select the text too, so Ctrl+C works where the clipboard API is refused.
    var range = document.createRange();
    range.selectNodeContents(pre);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(
        function () { say("copied " + text.length + " characters"); },
        function () { say("selected " + text.length + " characters: press Ctrl+C"); });
    } else {
      say("selected " + text.length + " characters: press Ctrl+C");
    }
  }
});
