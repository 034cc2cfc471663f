// The knowledge filter of a completion request (`agent_parameters.index_filter_expression`; docs/api-decisions.md,
// Knowledge):
//   expression := clause ( "and" clause )*
//   clause     := ( "source" | "file_name" ) "eq" "'" value "'"      ('' inside a value is one quote)
// Keywords and field names are case-insensitive; values are compared exactly.
import { validationError } from '../errors.js';
import type { Clause } from './vector-index.js';

const FIELD = 'settings.agent_parameters.index_filter_expression';
const CLAUSE = /\s*([A-Za-z_]+)\s+([A-Za-z]+)\s+'((?:[^']|'')*)'\s*/y;
const AND = /and\b/iy;
const FIELDS: readonly Clause['field'][] = ['source', 'file_name'];

const problem = (message: string) => validationError([{ field: FIELD, message }]);

/** The clauses of a filter expression; 400 ValidationError naming the field for anything else. */
export function parseFilter(expression: string | undefined): Clause[] {
  if (expression === undefined || expression.trim() === '') return [];
  if (expression.length > 4096) throw problem('the filter is longer than 4096 characters');
  const clauses: Clause[] = [];
  let at = 0;
  for (;;) {
    CLAUSE.lastIndex = at;
    const m = CLAUSE.exec(expression);
    if (!m) throw problem(`expected a clause like source eq 'value' at position ${at + 1}`);
    const [, field = '', operator = '', value = ''] = m;
    const name = FIELDS.find((f) => f === field.toLowerCase());
    if (!name) throw problem(`unknown field ${field}: filter on ${FIELDS.join(' or ')}`);
    if (operator.toLowerCase() !== 'eq') throw problem(`unsupported operator ${operator}: only eq is supported`);
    clauses.push({ field: name, value: value.replace(/''/g, "'") });
    at = CLAUSE.lastIndex;
    if (at === expression.length) return clauses;
    AND.lastIndex = at;
    if (!AND.exec(expression)) throw problem(`expected "and" at position ${at + 1}`);
    at = AND.lastIndex;
  }
}
