// Loaded first in every rank worker (before the wasm bundle): reports a worker that
// died — a panic, or the browser refusing more memory — to the page, in the message
// envelope gloo-worker's bridge decodes, so the page can name the files it was reading.
// Plain JavaScript on purpose: after a crash the worker's wasm instance is unusable.
// The worker's Rust code keeps `self.__memscopeWorker` current: the bridge id
// (`handler`), the ranks being loaded (`loading`), the last panic message (`panic`).
self.__memscopeWorker = { loading: [] };

function memscopeReportCrash(event) {
  const s = self.__memscopeWorker;
  if (!s || s.handler === undefined || s.dead) return;
  s.dead = true;
  const why = s.panic ||
    (event && (event.message || (event.reason && String(event.reason)))) ||
    'it ran out of memory or crashed';
  self.postMessage({
    ProcessOutput: [s.handler, { Crashed: { rank_keys: Array.from(s.loading), message: String(why) } }],
  });
}

self.addEventListener('error', memscopeReportCrash);
self.addEventListener('unhandledrejection', memscopeReportCrash);
