// `npm run infra:containers`: writes infra/containers.json from the code's container definitions. Bicep and
// Terraform both read that file, so the code is the one source of truth (a test fails when it is stale).
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { containersForInfra } from '../shared/infra-containers.js';

const file = fileURLToPath(new URL('../infra/containers.json', import.meta.url));
writeFileSync(file, `${JSON.stringify(containersForInfra(), null, 2)}\n`);
process.stdout.write(`wrote ${file}\n`);
