// The package the built-in plugins are listed under (plugins/builtin.ts), a module of its own so that every
// module naming a built-in plugin can import it whatever the order modules load in.
export const BUILTIN_PACKAGE = 'Dotnet-Builtin';
