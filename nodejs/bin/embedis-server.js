#!/usr/bin/env node
'use strict';
// `embedis-server [config-file] [--option value ...]`: redis-server's command line, served
// by the package's native addon in this process until the server shuts down.

const { serve } = require('..');

process.exitCode = serve(process.argv.slice(2));
