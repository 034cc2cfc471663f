// Portal branding: the Svc:Branding:* app configurations, their defaults, and the
// rules a value must meet before a portal renders it: a logo URL is https or relative, colours are CSS colours.
import colorString from 'color-string';

type Check = (value: string) => string | undefined;

const cssColor: Check = (v) =>
  colorString.get(v.trim()) ? undefined : 'must be a CSS colour (#0F6CBD, rgb(15 108 189), a colour name)';

const logoUrl: Check = (v) => {
  if (v === '') return undefined;
  // Relative to the portal's own origin: a path, never a protocol-relative `//host`.
  if (v.startsWith('/') && !v.startsWith('//') && !v.includes('\\')) return undefined;
  try {
    const url = new URL(v);
    return url.protocol === 'https:' && url.username === '' && url.password === ''
      ? undefined
      : 'must be an https URL without credentials';
  } catch {
    return 'must be an https URL or a path starting with /';
  }
};

const text: Check = (v) => (v.length <= 200 ? undefined : 'must be at most 200 characters');

/** Each branding field: its configuration key, its default and its rule. */
export const BRANDING = [
  { field: 'company_name', key: 'Svc:Branding:CompanyName', fallback: 'Agent Platform', check: text },
  { field: 'page_title', key: 'Svc:Branding:PageTitle', fallback: 'Agent Platform', check: text },
  { field: 'logo_url', key: 'Svc:Branding:LogoUrl', fallback: '', check: logoUrl },
  { field: 'primary_color', key: 'Svc:Branding:PrimaryColor', fallback: '#0F6CBD', check: cssColor },
  { field: 'primary_text_color', key: 'Svc:Branding:PrimaryTextColor', fallback: '#FFFFFF', check: cssColor },
] as const;

const byKey = new Map<string, Check>(BRANDING.map((b) => [b.key.toLowerCase(), b.check]));

/** Why a value may not be stored under an app configuration key; undefined when it may (or is not branding). */
export function brandingProblem(key: string, value: string): string | undefined {
  return byKey.get(key.toLowerCase())?.(value);
}
