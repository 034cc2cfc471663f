// Evaluates the small expressions the infrastructure uses for names, as Bicep and Terraform would: string
// templates with ${...}, identifiers, and the few functions names are built from. Hashes stand in for
// uniqueString (13 lower-case characters, deterministic in its arguments) and are real for sha256.
import { createHash } from 'node:crypto';

export type Scope = Record<string, string>;

const FUNCTIONS: Record<string, (...args: string[]) => string> = {
  toLower: (s = '') => s.toLowerCase(),
  lower: (s = '') => s.toLowerCase(),
  toUpper: (s = '') => s.toUpperCase(),
  replace: (s = '', a = '', b = '') => s.split(a).join(b),
  take: (s = '', n = '0') => s.slice(0, Number(n)),
  substr: (s = '', start = '0', n = '0') => s.slice(Number(start), Number(start) + Number(n)),
  sha256: (s = '') => createHash('sha256').update(s).digest('hex'),
  // Bicep's uniqueString: 13 characters of base-32 over a hash of the arguments.
  uniqueString: (...args) =>
    BigInt(`0x${createHash('sha256').update(args.join('|')).digest('hex').slice(0, 16)}`)
      .toString(32)
      .padStart(13, '0')
      .slice(0, 13),
};

class Parser {
  private i = 0;
  constructor(
    private readonly text: string,
    private readonly scope: Scope,
  ) {}

  private ws() {
    while (/\s/.test(this.text[this.i] ?? '')) this.i++;
  }

  /** A whole template body: literal text with ${...} interpolations, up to `end` (a quote) or the end. */
  template(end?: string): string {
    let out = '';
    while (this.i < this.text.length && this.text[this.i] !== end) {
      if (this.text.startsWith('${', this.i)) {
        this.i += 2;
        out += this.expression();
        this.ws();
        if (this.text[this.i] !== '}') throw new Error(`expected } at ${this.i} in ${this.text}`);
        this.i++;
      } else out += this.text.charAt(this.i++);
    }
    if (end !== undefined) this.i++;
    return out;
  }

  expression(): string {
    this.ws();
    const c = this.text[this.i];
    if (c === "'" || c === '"') {
      this.i++;
      return this.template(c);
    }
    const m =
      /^[A-Za-z_][\w.]*(\(\))?(\.[A-Za-z_]\w*)*/.exec(this.text.slice(this.i)) ?? /^\d+/.exec(this.text.slice(this.i));
    if (!m) throw new Error(`cannot read ${this.text.slice(this.i)}`);
    this.i += m[0].length;
    this.ws();
    if (this.text[this.i] === '(' && m[0] in FUNCTIONS) {
      this.i++;
      const args: string[] = [];
      for (;;) {
        this.ws();
        if (this.text[this.i] === ')') break;
        args.push(this.expression());
        this.ws();
        if (this.text[this.i] === ',') this.i++;
      }
      this.i++;
      return FUNCTIONS[m[0]]?.(...args) ?? '';
    }
    if (/^\d+$/.test(m[0])) return m[0];
    const value = this.scope[m[0]];
    if (value === undefined) throw new Error(`unknown name ${m[0]}`);
    return value;
  }
}

/** Evaluates a template (the text inside the quotes of a Bicep string, or a Terraform string as hcl2json gives it). */
export const evaluateTemplate = (text: string, scope: Scope) => new Parser(text, scope).template();

/** Evaluates an expression (`toLower(uniqueString(a, b))`). */
export const evaluateExpression = (text: string, scope: Scope) => new Parser(text, scope).expression();

/** Azure's naming rules for the resource kinds the infrastructure creates (resource-name-rules). */
export const NAME_RULES: Record<string, (name: string) => boolean> = {
  resourceGroup: (n) => /^[-\w.()]{1,90}$/.test(n) && !n.endsWith('.'),
  storage: (n) => /^[a-z0-9]{3,24}$/.test(n),
  cosmos: (n) => /^[a-z0-9][a-z0-9-]{1,42}[a-z0-9]$/.test(n),
  vault: (n) => /^[a-zA-Z][a-zA-Z0-9-]{1,22}[a-zA-Z0-9]$/.test(n) && !n.includes('--'),
  logs: (n) => /^[a-zA-Z0-9][a-zA-Z0-9-]{2,61}[a-zA-Z0-9]$/.test(n),
  insights: (n) => /^[^%&\\?/]{1,260}$/.test(n) && !/[ .]$/.test(n),
  identity: (n) => /^[a-zA-Z0-9][a-zA-Z0-9_-]{2,127}$/.test(n),
  plan: (n) => /^[a-zA-Z0-9][a-zA-Z0-9-]{0,58}[a-zA-Z0-9]$/.test(n),
  // Function app host names are global; Flex Consumption asks for 32 characters at most.
  functionApp: (n) => /^[a-zA-Z0-9][a-zA-Z0-9-]{0,30}[a-zA-Z0-9]$/.test(n),
  // Container Apps session pools: lower-case letters, digits and hyphens, starting with a letter, 32 at most.
  sessionPool: (n) => /^[a-z][a-z0-9-]{0,30}[a-z0-9]$/.test(n) && !n.includes('--'),
  // Container registries: 5 to 50 letters and digits, globally unique.
  registry: (n) => /^[a-zA-Z0-9]{5,50}$/.test(n),
  // Container Apps environments: lower-case letters, digits and hyphens, starting with a letter, 60 at most.
  containerEnvironment: (n) => /^[a-z][a-z0-9-]{0,58}[a-z0-9]$/.test(n) && !n.includes('--'),
  // Container apps: the same, 32 at most.
  containerApp: (n) => /^[a-z][a-z0-9-]{0,30}[a-z0-9]$/.test(n) && !n.includes('--'),
  // Event Grid system topics: letters, digits and hyphens, 3 to 128.
  systemTopic: (n) => /^[a-zA-Z0-9-]{3,128}$/.test(n),
};

/** Which rule a name key of either flavour follows. */
export function ruleFor(key: string): string {
  const k = key.toLowerCase().replace(/_/g, '');
  if (k.startsWith('resourcegroup')) return 'resourceGroup';
  if (k.startsWith('identity')) return 'identity';
  if (k.startsWith('plan')) return 'plan';
  if (k.startsWith('app')) return 'functionApp';
  if (k === 'sessionpool') return 'sessionPool';
  if (k === 'registry') return 'registry';
  if (k === 'relayenvironment') return 'containerEnvironment';
  if (k === 'relay') return 'containerApp';
  if (k === 'blobevents') return 'systemTopic';
  if (k in { storage: 1, cosmos: 1, vault: 1, logs: 1, insights: 1 }) return k;
  throw new Error(`No naming rule for ${key}: add one to NAME_RULES`);
}
