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

// A worker whose code could not start (its script or wasm refused or broken) never
// hears from the page (gloo-worker's bridge holds requests until the worker says it is
// loaded): it says it is, then answers every request as a crashed worker would, with
// the reason, so the page shows it on the file's card. Never silent.
function memscopeRefuseLoads(why) {
  const message = 'this browser could not start memscope\'s worker here (' + why + ')';
  self.postMessage('WorkerLoaded');
  self.onmessage = (event) => {
    const input = event.data && event.data.ProcessInput;
    if (!input) return;
    const load = input[1] && input[1].Load;
    self.postMessage({ ProcessOutput: [input[0], { Crashed: { rank_keys: load ? [load.rank_key] : [], message } }] });
  };
}
