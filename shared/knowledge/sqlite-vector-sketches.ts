// The sketches (sketch.ts) of the indexes searched so far, by vector length and index name: loaded from the
// covering index of their vector table on first use and kept in step with this connection's writes, which
// reach them once their transaction commits. Another connection's commit drops them all: SQLite's
// data_version tells, and what that connection wrote is read with the next load.
import type Database from 'better-sqlite3';
import { codeOf, type VectorFile } from './sqlite-vector-file.js';
import { Sketch } from './sketch.js';
import { columnValue, tupleOf } from './sqlite-rows.js';

const dataVersionOf = (db: Database.Database) => columnValue('integer', db.pragma('data_version', { simple: true }));
/** A partition's code as the covering index holds it: rowid, access key, expiry, code. */
const CODE_ROW = ['integer', 'text', 'integer', 'blob'] as const;
const sketchKey = (dimensions: number, index: string) => `${dimensions}:${index}`;

export class SketchCache {
  private readonly sketches = new Map<string, Sketch>();
  private dataVersion: number;

  constructor(private readonly file: VectorFile) {
    this.dataVersion = dataVersionOf(file.db);
  }

  /** The index's sketch for vectors of this length if it is loaded: what a committed write changes. */
  loaded(dimensions: number, index: string): Sketch | undefined {
    return this.sketches.get(sketchKey(dimensions, index));
  }

  /** The index's sketch for vectors of this length, loaded on first use. */
  load(table: string, dimensions: number, index: string): Sketch {
    const version = dataVersionOf(this.file.db);
    if (version !== this.dataVersion) {
      this.sketches.clear();
      this.dataVersion = version;
    }
    const key = sketchKey(dimensions, index);
    let sketch = this.sketches.get(key);
    if (!sketch) {
      sketch = new Sketch(dimensions);
      const read = this.file.statement(`SELECT rowid, access, expires_at, code FROM ${table} WHERE index_name = ?`);
      for (const row of read.raw().iterate(index)) {
        const [rowid, accessKey, expiresAt, code] = tupleOf(CODE_ROW, row);
        sketch.add({ rowid, code: codeOf(code), accessKey, expiresAt });
      }
      this.sketches.set(key, sketch);
    }
    return sketch;
  }
}
