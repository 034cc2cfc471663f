// Plain node:http requests, for what fetch hides: the connection a request went over, bodies that are cut
// off or malformed on purpose, and headers no well-behaved client sends.
import http from 'node:http';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The request went over a kept-alive connection that had answered before. */
  reusedSocket: boolean;
}

export function rawRequest(
  url: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: Buffer | string;
    agent?: http.Agent;
    timeoutMs?: number;
  } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: options.method ?? 'GET',
        headers: options.headers,
        agent: options.agent ?? false,
        timeout: options.timeoutMs ?? 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
            reusedSocket: req.reusedSocket,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} in time`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A multipart body whose file part never reaches its closing boundary. */
export const truncatedMultipart = (field = 'file', fileName = 'a.zip') =>
  Buffer.from(
    `--XX\r\nContent-Disposition: form-data; name="${field}"; filename="${fileName}"\r\nContent-Type: ` +
      `application/zip\r\n\r\nPK\u0003\u0004abc`,
    'latin1',
  );
