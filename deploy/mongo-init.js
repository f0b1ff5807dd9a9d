// One-shot (compose.yaml, mongo-init): make mongo1..3 the replica set rs0, once, then wait for
// a primary. Run again it finds the set made and only waits.
const config = {
  _id: "rs0",
  members: [
    { _id: 0, host: "mongo1:27017", priority: 2 },
    { _id: 1, host: "mongo2:27017", priority: 1 },
    { _id: 2, host: "mongo3:27017", priority: 1 },
  ],
};
try {
  rs.status();
  print("replica set rs0 exists");
} catch (e) {
  if (e.codeName !== "NotYetInitialized") throw e;
  rs.initiate(config);
  print("replica set rs0 initiated");
}
for (let i = 0; i < 120; i++) {
  if (rs.status().members.some((m) => m.stateStr === "PRIMARY")) {
    print("rs0 has a primary");
    quit(0);
  }
  sleep(1000);
}
print("rs0 elected no primary within 120 s");
quit(1);
