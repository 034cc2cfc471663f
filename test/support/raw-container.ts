// Store tests write documents of shapes of their own into the service's containers (the store's contract holds
// for any document): a container typed by the test. Production code never does this; there a container's
// name decides the type of its documents.
import type { ContainerName } from '../../shared/store/containers.js';
import type { Container, Doc, DocumentStore } from '../../shared/store/types.js';

export function rawContainer<T extends Doc = Doc & Record<string, unknown>>(
  store: Pick<DocumentStore, 'container'>,
  name: ContainerName,
): Container<T> {
  return store.container(name) as unknown as Container<T>;
}
