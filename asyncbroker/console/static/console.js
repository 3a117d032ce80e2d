// Live refresh: an element with data-refresh="ms" is replaced every ms by the same element of a
// fresh copy of this page (fetched from the server; no client-side rendering).
document.addEventListener("DOMContentLoaded", () => {
  for (const el of document.querySelectorAll("[data-refresh]")) {
    const every = Math.max(500, parseInt(el.dataset.refresh, 10) || 2000);
    const tick = async () => {
      try {
        const response = await fetch(window.location.href, {headers: {"Accept": "text/html"}});
        if (response.ok) {
          const doc = new DOMParser().parseFromString(await response.text(), "text/html");
          const fresh = doc.getElementById(el.id);
          const current = document.getElementById(el.id);
          if (fresh && current) current.replaceWith(fresh);
        }
      } catch (e) { /* the broker may be restarting: try again at the next tick */ }
      setTimeout(tick, every);
    };
    setTimeout(tick, every);
  }
});
