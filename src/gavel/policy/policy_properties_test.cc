// Tests are being written; this file is filled in before it lands.
