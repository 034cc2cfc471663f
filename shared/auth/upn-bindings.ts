// A user's own data is keyed by UPN (ownerKey). Identity providers reuse UPNs: a departed employee's name
// is given to a new hire, whose token carries the same UPN and another object id. So each UPN is bound to
// the object id that first signed in with it; a token whose UPN is bound to another object id acts as
// `<upn>#<oid>`, an owner of its own, and never reads the first holder's sessions, files or memory.
import { ConflictError, type Container, type Doc, type DocsOf } from '../store/types.js';
import { ownerKey, type Principal } from './principal.js';

interface BindingDoc extends Doc {
  oid: string;
  bound_on: string;
}

declare module '../store/types.js' {
  interface StoredDocs {
    'principals/binding': BindingDoc;
  }
}

/** Whether a document of the principals container is a UPN's binding (its own partition). */
export const isBinding = (doc: DocsOf<'principals'>): doc is BindingDoc => doc.pk === PK;

const PK = 'upn-bindings';

export class UpnBindings {
  /** UPN (case-folded) to its bound object id: read once per process, then answered from memory. */
  private readonly known = new Map<string, string>();

  constructor(private readonly container: Container<BindingDoc>) {}

  /** The principal as its data's owner: unchanged when its UPN is bound to it (or it has no UPN), else qualified. */
  async owner(p: Principal): Promise<Principal> {
    if (p.kind !== 'user' || p.upn === '' || p.id === '') return p;
    const key = ownerKey(p.upn);
    const bound = this.known.get(key) ?? (await this.bind(key, p.id));
    return bound === p.id ? p : { ...p, upn: `${p.upn}#${p.id}` };
  }

  private async bind(key: string, oid: string): Promise<string> {
    let doc = await this.container.read(PK, key);
    if (!doc) {
      try {
        doc = await this.container.create({ id: key, pk: PK, oid, bound_on: new Date().toISOString() });
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e;
        doc = await this.container.read(PK, key);
      }
    }
    const bound = doc?.oid ?? oid;
    if (this.known.size > 100_000) this.known.clear();
    this.known.set(key, bound);
    return bound;
  }
}
