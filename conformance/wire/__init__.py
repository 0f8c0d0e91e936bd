"""The protocol's wire types: generated protobuf classes, their proto3 JSON
forms, the token-counting formulas and the error taxonomy."""
