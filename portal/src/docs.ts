// The API reference: the OpenAPI documents the service serves, rendered by Swagger UI. The Core API's host
// answers both (`/openapi.json`, and `?api=management` for the Management API's), so the page needs no
// other origin. Served at /portal/docs.html, and /docs redirects there.
import { SwaggerUIBundle, SwaggerUIStandalonePreset } from 'swagger-ui-dist';
import 'swagger-ui-dist/swagger-ui.css';

SwaggerUIBundle({
  dom_id: '#api-reference',
  urls: [
    { url: '/openapi.json', name: 'Core API' },
    { url: '/openapi.json?api=management', name: 'Management API' },
  ],
  deepLinking: true,
  // The standalone layout: a picker of the two documents above the reference. (The package's types leave
  // `presets` untyped.)
  // eslint-disable-next-line @typescript-eslint/no-unsafe-member-access
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: 'StandaloneLayout',
});
