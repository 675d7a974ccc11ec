import java.lang.reflect.Field;

/**
 * Starts DynamoDB Local listening on 127.0.0.1 only. DynamoDB Local has no option to choose the address
 * (its Jetty connector binds every interface), so this launcher builds the server from the usual
 * command line, sets the connector's host before it starts, then starts it. Run by local/dynamodb-local.ts
 * with `java -cp <DynamoDBLocal.jar and its lib> LoopbackDynamoDbLocal.java <DynamoDB Local options>`.
 */
public class LoopbackDynamoDbLocal {
  public static void main(String[] args) throws Exception {
    var proxy = software.amazon.dynamodb.services.local.main.ServerRunner.createServerFromCommandLineArgs(args);
    Field field = proxy.getClass().getDeclaredField("server");
    field.setAccessible(true);
    var server = (org.eclipse.jetty.server.Server) field.get(proxy);
    for (var connector : server.getConnectors()) {
      ((org.eclipse.jetty.server.ServerConnector) connector).setHost("127.0.0.1");
    }
    proxy.start();
  }
}
