/* Door check-in service worker (scope {{ scope }}): keeps the door page and its scripts on the
   phone so the door works without network. Served by booking/checkin/views.py; the version
   changes with the assets. Check-ins, the ticket list and the counts are never answered from
   here: the page keeps those in IndexedDB and queues what it admits offline. */
"use strict";
const VERSION = {{ version_json|safe }};
const CACHE = "door-checkin-" + VERSION;
const SCOPE = {{ scope_json|safe }};
const ASSETS = {{ assets_json|safe }};

self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(ASSETS)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches.keys()
      .then((keys) => Promise.all(keys.filter((k) => k.startsWith("door-checkin-") && k !== CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim())
  );
});

function isPage(request, url) {
  return request.mode === "navigate" && url.pathname.startsWith(SCOPE);
}

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return; // scans and syncs always go to the network
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  if (ASSETS.includes(url.pathname)) {
    event.respondWith(caches.match(url.pathname).then((hit) => hit || fetch(request)));
  } else if (isPage(request, url)) {
    // The page: fresh from the network when there is one (and kept), else the kept copy.
    const key = url.origin + url.pathname;
    event.respondWith(
      fetch(request)
        .then((response) => {
          if (response.ok && !response.redirected) {
            const copy = response.clone();
            caches.open(CACHE).then((cache) => cache.put(key, copy));
          }
          return response;
        })
        .catch(() => caches.match(key, { cacheName: CACHE }).then((hit) => hit || caches.match(key)).then(
          (hit) => hit || new Response("<h1>Offline</h1><p>This page was not opened on this phone before.</p>", {
            status: 503, headers: { "Content-Type": "text/html; charset=utf-8" },
          })
        ))
    );
  }
});
