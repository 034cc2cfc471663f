// The package the built-in plugins are listed under (plugins/builtin.ts): a name, kept with the resource types so
// that every module naming a built-in plugin (the shields, the pipeline stages) imports it from below them.
export const BUILTIN_PACKAGE = 'Dotnet-Builtin';
