// Multipart bodies. The documents give them as objects of fields (a file as a Blob), and openapi-fetch sends a
// FormData as it is (the browser sets its boundary), so a typed body becomes FormData on the way out.

/** A multipart body's fields as FormData: a request's bodySerializer. */
export function formData(fields: Record<string, string | Blob | undefined>): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) form.set(name, value);
  return form;
}
