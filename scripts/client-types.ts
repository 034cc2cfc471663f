// TypeScript types of an API for openapi-fetch, generated from its OpenAPI document with openapi-typescript:
//   npm run client:types -- http://localhost:7071/openapi.json core-api.ts
// Binary fields (uploads, downloads) become Blob, as openapi-typescript's documentation recommends, so a
// multipart upload type-checks with a File or Blob and nothing in the output needs editing.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';

const BLOB = ts.factory.createTypeReferenceNode(ts.factory.createIdentifier('Blob'));
const NULL = ts.factory.createLiteralTypeNode(ts.factory.createNull());

/** The generated module's text for an OpenAPI document (an object, or a URL to read it from). */
export async function clientTypes(document: object | URL): Promise<string> {
  const ast = await openapiTS(document as Parameters<typeof openapiTS>[0], {
    transform(schema) {
      if ('format' in schema && schema.format === 'binary')
        return schema.nullable ? ts.factory.createUnionTypeNode([BLOB, NULL]) : BLOB;
      return undefined;
    },
  });
  return astToString(ast);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [source, out] = process.argv.slice(2);
  if (!source || !out) {
    console.error('usage: npm run client:types -- <OpenAPI URL or file> <output .ts>');
    process.exit(2);
  }
  const url = /^https?:\/\//.test(source) ? new URL(source) : new URL(source, `file://${process.cwd()}/`);
  writeFileSync(out, await clientTypes(url));
  console.log(`Wrote ${out}`);
}
