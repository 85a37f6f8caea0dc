// weir console: the pages' only script. It keeps the overview current without a reload: elements with
// data-refresh are replaced by the HTML fragment at that address, and .throughput charts (uPlot) are fed
// the JSON at data-src, every data-every milliseconds. Everything else is plain HTML forms and links.
(function () {
  "use strict";

  function every(el, fn) {
    var ms = parseInt(el.getAttribute("data-every"), 10) || 5000;
    fn();
    setInterval(function () { if (!document.hidden) fn(); }, ms);
  }

  function refresh(el) {
    every(el, function () {
      fetch(el.getAttribute("data-refresh"), { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(function (html) { el.innerHTML = html; el.setAttribute("data-refreshed", String(Date.now())); })
        .catch(function () { el.setAttribute("data-stale", "true"); });
    });
  }

  function chart(el) {
    var plot = null;
    every(el, function () {
      fetch(el.getAttribute("data-src"), { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
        .then(function (d) {
          var data = [d.t, d.completed, d.dead];
          if (plot) { plot.setData(data); }
          else {
            plot = new uPlot({
              width: Math.max(300, el.clientWidth), height: 180,
              series: [{}, { label: "completed", stroke: "#1e7a3c" }, { label: "dead", stroke: "#b3261e" }],
              axes: [{}, { size: 50 }]
            }, data, el);
          }
          el.setAttribute("data-points", String(d.t.length));
        })
        .catch(function () { el.setAttribute("data-stale", "true"); });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-refresh]").forEach(refresh);
    if (window.uPlot) document.querySelectorAll(".throughput").forEach(chart);
  });
})();
