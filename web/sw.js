// memscope's service worker: makes the page work offline after one visit.
//
// scripts/postbuild.py fills in the build's version and file list. Every build gets its
// own cache; activating a new build deletes the old caches.
// - Files of this build (content-hashed app, worker, example, stylesheet) are served
//   from the cache first: they never change within a version, and spawning a worker
//   while a file loads then makes no network request.
// - The page itself (navigations) goes to the network first, so a new deployment is
//   seen at once, and falls back to the cached page when offline.

const VERSION = '__MEMSCOPE_VERSION__';
const FILES = __MEMSCOPE_FILES__;
const CACHE = `memscope-${VERSION}`;

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches.open(CACHE).then((cache) => cache.addAll(FILES)).then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((keys) => Promise.all(keys.filter((k) => k.startsWith('memscope-') && k !== CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== 'GET' || url.origin !== self.location.origin) return;
  if (request.mode === 'navigate') {
    event.respondWith(
      fetch(request).catch(() =>
        caches.open(CACHE).then((cache) => cache.match(request, { ignoreSearch: true }).then((hit) => hit || cache.match('./'))),
      ),
    );
    return;
  }
  event.respondWith(
    caches.open(CACHE).then((cache) =>
      cache.match(request, { ignoreSearch: true }).then((hit) => hit || fetch(request)),
    ),
  );
});
