// Preloaded into the Portkey gateway for the streams bench (`node --import`). Portkey 1.15.2 adds its own
// headers to the upstream's fetch Response; on Node 20 those headers are immutable, so it answers every
// streamed request 500 ("immutable"). Handing it a Response with a mutable copy of the headers, and the
// same body stream, lets it stream as it does on the runtimes it was written for.
const upstreamFetch = globalThis.fetch;
globalThis.fetch = async (...args) => {
  const response = await upstreamFetch(...args);
  return new globalThis.Response(response.body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
};
